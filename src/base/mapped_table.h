// The memory of a table the signal handler writes into (sampler::PcTable,
// unwind::StackTable): the table object and its arrays in one private
// anonymous mapping sized once at setup, so the handler never allocates;
// pages the handler never reaches cost nothing. The object sits on a page of
// its own, so that clearing hands every page of the arrays back to the
// kernel instead of writing zeros over them: a fork child of a shell loop
// clears its tables, and writing would touch every page (issue 12).
//
// NOT async-signal-safe (mmap, munmap, madvise): setup and teardown only
// (and a fork child's clear_mapped_arrays).
#ifndef PROFIL_BASE_MAPPED_TABLE_H
#define PROFIL_BASE_MAPPED_TABLE_H

#include <sys/mman.h>

#include <cstddef>

namespace profiling::base {

inline constexpr size_t kMappedPage = 4096;

inline size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Where a table's arrays start: after the object's page(s).
template <class Table>
constexpr size_t mapped_arrays_offset() {
  return (sizeof(Table) + kMappedPage - 1) & ~(kMappedPage - 1);
}

// Memory for a Table (constructed there by its own create(), with
// placement new) followed by array_bytes of zeros (fresh anonymous pages),
// or nullptr. *mapped_bytes: what destroy_mapped unmaps. MAP_NORESERVE: a
// table sized for the worst case commits only what is used.
template <class Table>
void* map_table(size_t array_bytes, size_t* mapped_bytes) {
  const size_t bytes = mapped_arrays_offset<Table>() + array_bytes;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  *mapped_bytes = bytes;
  return memory;
}

// The start of the arrays of a table in map_table's memory.
template <class Table>
char* mapped_arrays(Table* table) {
  return reinterpret_cast<char*>(table) + mapped_arrays_offset<Table>();
}

// Destroys a table made in map_table's memory and unmaps it.
template <class Table>
void destroy_mapped(Table* table, size_t mapped_bytes) {
  if (table == nullptr) return;
  table->~Table();
  ::munmap(table, mapped_bytes);
}

// Zeros the arrays of a table in map_table's memory by handing their pages
// back (madvise(2): a private anonymous page reads as zeros again); where
// the kernel refuses, zero_slot(i) writes the zeros of each slot i of
// [0, slots) instead. Takes no lock and allocates nothing: a fork child of
// a profiled process clears its tables (runtime/preload_fork_exec.cc).
template <class Table, class ZeroSlot>
void clear_mapped_arrays(Table* table, size_t mapped_bytes, size_t slots, ZeroSlot&& zero_slot) {
  const size_t offset = mapped_arrays_offset<Table>();
  if (mapped_bytes <= offset) return;
  if (::madvise(mapped_arrays(table), mapped_bytes - offset, MADV_DONTNEED) == 0) return;
  for (size_t i = 0; i < slots; ++i) zero_slot(i);
}

}  // namespace profiling::base

#endif  // PROFIL_BASE_MAPPED_TABLE_H
