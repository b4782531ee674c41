#include "outside/kernel_symbols.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace profiling::outside {

KernelSymbols KernelSymbols::read(const std::string& path) {
  KernelSymbols k;
  std::ifstream in(path);
  std::string line;
  std::map<std::string, uint32_t> modules;
  bool any_address = false;
  while (std::getline(in, line)) {
    // "ffffffff81000000 T _text" or "ffffffffc0000000 t fn\t[module]"
    char* end = nullptr;
    const uint64_t address = std::strtoull(line.c_str(), &end, 16);
    if (end == line.c_str() || *end != ' ' || end[1] == '\0' || end[2] != ' ') continue;
    const char type = static_cast<char>(end[1] | 0x20);
    if (type != 't' && type != 'w') continue;  // functions (text, weak), not data
    any_address = any_address || address != 0;
    std::string name(end + 3);
    uint32_t module = UINT32_MAX;
    if (const size_t tab = name.find('\t'); tab != std::string::npos) {
      std::string mod = name.substr(tab + 1);
      name.resize(tab);
      const auto [it, added] = modules.try_emplace(mod, static_cast<uint32_t>(k.names_.size()));
      if (added) k.names_.append(mod).push_back('\0');
      module = it->second;
    }
    k.symbols_.push_back({address, static_cast<uint32_t>(k.names_.size()), module});
    k.names_.append(name).push_back('\0');
  }
  if (!any_address) return KernelSymbols{};  // kptr_restrict hides them from us
  std::stable_sort(k.symbols_.begin(), k.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return k;
}

format::Frame KernelSymbols::frame_of(uint64_t address) const {
  const auto after = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                      [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (after == symbols_.begin()) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
    return format::Frame{hex, hex, "", 0};
  }
  const Symbol& s = *(after - 1);
  std::string name = names_.c_str() + s.name;
  if (s.module != UINT32_MAX) name.append(" ").append(names_.c_str() + s.module);
  return format::Frame{name, name, "", 0};
}

}  // namespace profiling::outside
