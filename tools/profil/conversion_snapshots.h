// What profil does with the conversions of a run's snapshots (--every):
// appends each to the run's account, and folds the summaries of the
// processes that have ended into one (an attach of hours to a server whose
// workers come and go would keep a summary, a stem and file names for each
// otherwise; issue 32). Split from run_convert.h, which converts one.
#ifndef PROFIL_TOOLS_CONVERSION_SNAPSHOTS_H
#define PROFIL_TOOLS_CONVERSION_SNAPSHOTS_H

#include "run_convert.h"

namespace profiling::cli {

// What a later conversion wrote (a snapshot's), after what *into holds: its
// files, processes, losses and warnings (a warning already there not
// again), and its shared file when it wrote one.
void append_conversion(Conversion* into, Conversion later);

// The summaries of every image that has ended by its exit (never the
// image before an exec: its pid runs on), all their snapshots, folded
// into c->folded, and their files' names dropped from c->files (counted).
// The run's one-line summary and its lines on unsampled time count them
// as before; -v's line per process cannot (OutsideRunOptions::fold_ended).
void fold_ended(Conversion* c);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_CONVERSION_SNAPSHOTS_H
