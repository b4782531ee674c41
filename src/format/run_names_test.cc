// The run directory's names: what the runtime writes, profil run reads back
// the same, whatever the program is called; and a name the runtime does not
// write is never taken for one of its dumps.
#include "format/run_names.h"

#include <gtest/gtest.h>

#include <string>

namespace profiling::format {
namespace {

std::string dump_name(const char* program, int64_t pid, const char* token, unsigned copy) {
  char name[256];
  const size_t length = format_dump_name(name, sizeof name, program, pid, token, copy);
  EXPECT_EQ(length, std::string(name).size());
  return name;
}

// Formats, parses with and without the pid known, and checks each field.
void expect_round_trip(const std::string& program, int64_t pid, const char* token, unsigned copy) {
  SCOPED_TRACE(program + " pid " + std::to_string(pid) + " copy " + std::to_string(copy));
  const std::string name = dump_name(program.c_str(), pid, token, copy);
  for (const int64_t known : {pid, int64_t{0}}) {
    const std::optional<DumpName> parsed = parse_dump_name(name, known);
    ASSERT_TRUE(parsed.has_value()) << name;
    // Without a token a copy number reads as the pid unless the pid is known.
    if (token == nullptr && copy != 0 && known == 0) continue;
    EXPECT_EQ(parsed->program, program);
    EXPECT_EQ(parsed->pid, pid);
    EXPECT_EQ(parsed->token, token ? token : "");
    EXPECT_EQ(parsed->copy, copy);
    EXPECT_FALSE(parsed->temporary());
    EXPECT_EQ(parsed->stem(), program + "." + std::to_string(pid) + (copy ? "." + std::to_string(copy) : ""));
  }
  char temporary[300];
  ASSERT_GT(format_temporary_name(temporary, sizeof temporary, name.c_str(), 4242), 0u);
  EXPECT_EQ(std::string(temporary), name + ".tmp.4242");
  const std::optional<DumpName> parsed = parse_dump_name(temporary, pid);
  ASSERT_TRUE(parsed.has_value()) << temporary;
  EXPECT_EQ(parsed->writer, 4242);
  EXPECT_EQ(parsed->program, program);
  EXPECT_EQ(parsed->pid, pid);
  EXPECT_EQ(parsed->copy, copy);
}

TEST(RunNames, DumpNamesRoundTrip) {
  for (const char* token : {static_cast<const char*>(nullptr), "0badf00d"}) {
    for (const unsigned copy : {0u, 1u, 17u}) {
      expect_round_trip("bash", 12345, token, copy);
      expect_round_trip("my program", 7, token, copy);        // spaces
      expect_round_trip("python3.11", 4194304, token, copy);  // dots and digits
      expect_round_trip("a.12", 12, token, copy);             // its own ".<pid>"
      expect_round_trip("x.run-12345678", 99, token, copy);   // its own run mark
      expect_round_trip("cc1plus.profraw", 3, token, copy);   // its own suffix
      expect_round_trip(std::string(100, 'p'), 31, token, copy);
    }
  }
}

TEST(RunNames, TheNamesTheRuntimeWrites) {
  EXPECT_EQ(dump_name("bash", 12, "0badf00d", 0), "bash.12.run-0badf00d.profraw");
  EXPECT_EQ(dump_name("bash", 12, "0badf00d", 2), "bash.12.run-0badf00d.2.profraw");
  EXPECT_EQ(dump_name("bash", 12, nullptr, 0), "bash.12.profraw");
  EXPECT_EQ(dump_name("bash", 12, nullptr, 3), "bash.12.3.profraw");
  // No name, and a name holding a slash (a program may set its own).
  EXPECT_EQ(dump_name(nullptr, 5, nullptr, 0), "program.5.profraw");
  EXPECT_EQ(dump_name("", 5, nullptr, 0), "program.5.profraw");
  EXPECT_EQ(dump_name("a/b", 5, nullptr, 0), "a_b.5.profraw");
  char ledger[kLedgerNameSize];
  EXPECT_EQ(format_ledger_name(ledger, sizeof ledger, "0badf00d"), sizeof ledger - 1);
  EXPECT_STREQ(ledger, "processes.run-0badf00d.ledger");
}

TEST(RunNames, VeryLongProgramNamesAreCut) {
  const std::string long_name(300, 'x');
  const std::string name = dump_name(long_name.c_str(), 42, "0badf00d", 1);
  EXPECT_EQ(name, std::string(kMaxProgramInName, 'x') + ".42.run-0badf00d.1.profraw");
  const std::optional<DumpName> parsed = parse_dump_name(name);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->program, std::string(kMaxProgramInName, 'x'));
  EXPECT_EQ(parsed->stem(), std::string(kMaxProgramInName, 'x') + ".42.1");
}

TEST(RunNames, ABufferTooSmallGetsNothing) {
  char small[12] = "unchanged";
  EXPECT_EQ(format_dump_name(small, sizeof small, "bash", 12345, nullptr, 0), 0u);
  EXPECT_STREQ(small, "");
  char exact[sizeof "bash.12.profraw"];
  EXPECT_EQ(format_dump_name(exact, sizeof exact, "bash", 12, nullptr, 0), sizeof exact - 1);
  char ledger[kLedgerNameSize - 1];
  EXPECT_EQ(format_ledger_name(ledger, sizeof ledger, "0badf00d"), 0u);
}

TEST(RunNames, TheTokenOfARunId) {
  EXPECT_STREQ(run_token("4242-1700000000123456789-0badf00d"), "0badf00d");
  EXPECT_EQ(run_token("4242-1700000000123456789-0badf0"), nullptr);
  EXPECT_EQ(run_token("no dash"), nullptr);
  EXPECT_EQ(run_token(""), nullptr);
}

TEST(RunNames, ForeignNamesAreRejected) {
  for (const char* foreign : {
           "",
           ".profraw",
           "bash.profraw",                         // no pid
           ".12.profraw",                          // no program
           "bash.12.pb.gz",                        // a profile, not a dump
           "bash.12.profraw.gz",
           "processes.run-0badf00d.ledger",        // the ledger
           "bash.x12.profraw",                     // not a number
           "bash.-12.profraw",
           "bash.012.profraw",                     // not as the runtime writes numbers
           "bash.12.run-0badf00d.0.profraw",       // copies count from 1
           "bash.run-0badf00d.profraw",            // a token but no pid
           "bash.12.run-0badf00d.x.profraw",
           "bash.12.profraw.tmp.",                 // a temporary without its writer
           "bash.12.profraw.tmp.x",
           "bash.12.profraw.tmp.0",
       }) {
    EXPECT_FALSE(parse_dump_name(foreign).has_value()) << foreign;
  }
  // A program name longer than the runtime writes.
  EXPECT_FALSE(parse_dump_name(std::string(kMaxProgramInName + 1, 'x') + ".1.profraw").has_value());
}

TEST(RunNames, ATokenOfTheWrongSizeIsPartOfTheProgramName) {
  // Not a token: the name reads as program "bash.12.run-abc", pid 7.
  const std::optional<DumpName> parsed = parse_dump_name("bash.12.run-abc.7.profraw");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->program, "bash.12.run-abc");
  EXPECT_EQ(parsed->pid, 7);
  EXPECT_EQ(parsed->token, "");
}

}  // namespace
}  // namespace profiling::format
