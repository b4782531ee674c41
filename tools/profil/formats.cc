#include "formats.h"

#include <cstdio>

#include "report/export.h"
#include "report/render.h"
#include "report/speedscope.h"

namespace profiling::cli {
namespace {

std::string export_pprof(const format::Profile& profile, report::Symbolizer& symbolizer, const std::string&) {
  return report::export_pprof(profile, &symbolizer);
}

std::string export_gmon(const format::Profile& profile, report::Symbolizer& symbolizer,
                        const std::string& destination) {
  uint64_t left_out = 0;
  std::string bytes = report::export_gmon(profile, symbolizer, &left_out);
  // A gmon.out has one histogram, of the main executable (gprof reads no
  // other object), so the rest cannot go in: say how much.
  if (left_out)
    std::fprintf(stderr, "profil: warning: %llu samples outside the main executable are not in %s\n",
                 static_cast<unsigned long long>(left_out), destination.c_str());
  return bytes;
}

// The order of the entries is the order --help and the man pages list.
const std::vector<OutputFormat>& table() {
  static const std::vector<OutputFormat> formats = {
      {.name = "text",
       .help = "aligned columns, coloured on a terminal",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&, bool colour) { return report::render_text(r, colour); },
       .compared = [](const report::Diff& d, const std::string& base, const std::string& changed,
                      bool colour) { return report::render_diff_text(d, base, changed, colour); }},
      {.name = "csv",
       .help = "comma-separated values, one header line",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&, bool) { return report::render_csv(r); },
       .compared = [](const report::Diff& d, const std::string&, const std::string&, bool) {
         return report::render_diff_csv(d);
       }},
      {.name = "json",
       .help = "one JSON document (schemas in docs/report.md)",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&, bool) { return report::render_json(r); },
       .compared = [](const report::Diff& d, const std::string&, const std::string&, bool) {
         return report::render_diff_json(d);
       }},
      {.name = "folded",
       .help = "whole stacks, root first, for flame graph tools",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&,
                      bool) { return report::render_folded(r); },
       .stacks = true},
      {.name = "tree",
       .help = "the stacks as a call tree: total and self samples, callees indented",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&,
                      bool) { return report::render_tree(r); },
       .stacks = true},
      {.name = "html",
       .help = "one self-contained page with charts and source",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile& symbolized,
                      bool) { return report::render_html(r, symbolized); },
       .compared = [](const report::Diff& d, const std::string& base, const std::string& changed, bool) {
         return report::render_diff_html(d, base, changed);
       },
       .per_address = true,
       .stacks = true,
       .sources = true,
       .timeline = true},
      {.name = "speedscope",
       .help = "speedscope's JSON: each thread's samples in time order",
       .rendered = [](const report::Report& r, const report::SymbolizedProfile&,
                      bool) { return report::render_speedscope(*r.timeline); },
       .timeline = true},
      {.name = "pprof", .help = "a gzipped pprof profile.proto", .exported = export_pprof},
      {.name = "gmon", .help = "a GNU gmon.out for gprof (the main executable's samples)", .exported = export_gmon},
  };
  return formats;
}

bool serves(const OutputFormat& format, FormatUse use) {
  switch (use) {
    case FormatUse::report:
      return format.exported != nullptr || format.rendered != nullptr;
    case FormatUse::merge:
      return format.exported != nullptr;
    case FormatUse::diff:
      return format.compared != nullptr;
  }
  return false;
}

}  // namespace

std::vector<const OutputFormat*> output_formats(FormatUse use) {
  std::vector<const OutputFormat*> formats;
  for (const OutputFormat& format : table())
    if (serves(format, use)) formats.push_back(&format);
  return formats;
}

const OutputFormat* find_format(FormatUse use, std::string_view name) {
  for (const OutputFormat* format : output_formats(use))
    if (format->name == name) return format;
  return nullptr;
}

void add_format_option(CLI::App& app, std::string* format, FormatUse use, const std::string& more) {
  std::vector<std::string> names;
  std::string list, footer = "Formats:";
  const std::vector<const OutputFormat*> formats = output_formats(use);
  for (size_t i = 0; i < formats.size(); ++i) {
    names.emplace_back(formats[i]->name);
    list += (i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ") + names.back();
    footer += "\n  " + names.back() + std::string(8 - std::min<size_t>(names.back().size(), 7), ' ') +
              std::string(formats[i]->help);
  }
  app.add_option("--format,-f", *format, list + more)->check(CLI::IsMember(names));
  app.footer(footer);
}

}  // namespace profiling::cli
