// C++ names for the demangling test: a namespace, a template, a const member
// and an operator. "addresses" prints where they are, like prog.c.
#include <cstdio>
#include <cstring>

namespace fixture {
template <typename T>
struct Box {
  T value;
  __attribute__((noinline)) T get() const { return value * 3; }
};
struct Meter {
  int total = 0;
  __attribute__((noinline)) Meter& operator+=(int v) {
    total += v;
    return *this;
  }
};
}  // namespace fixture

int main(int argc, char** argv) {
  fixture::Box<int> box{argc};
  fixture::Meter meter;
  meter += box.get();
  if (argc > 1 && std::strcmp(argv[1], "addresses") == 0) {
    auto get = &fixture::Box<int>::get;
    auto add = &fixture::Meter::operator+=;
    void* get_address;
    void* add_address;
    std::memcpy(&get_address, &get, sizeof get_address);
    std::memcpy(&add_address, &add, sizeof add_address);
    std::printf("sym fixture::Box<int>::get() const %p\n", get_address);
    std::printf("sym fixture::Meter::operator+=(int) %p\n", add_address);
    FILE* maps = std::fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && std::fgets(line, sizeof line, maps)) std::printf("map %s", line);
    if (maps) std::fclose(maps);
  }
  return meter.total == 12345 ? 1 : 0;
}
