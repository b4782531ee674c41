// Snapshots from inside (profil run --inside --every T, issue 21): how the
// tool asks every process of the run for a dump now, without a signal.
//
// A signal would be the program's to feel (SIGUSR1/2 are programs' own, and
// any signal interrupts a blocking call with EINTR unless SA_RESTART), and
// a descriptor or mapping in the program would be one it could see or
// close. So the tool grows a file of the run directory by a byte at each
// snapshot (PROFIL_SNAPSHOTS names it), and each process looks at its
// size from the sampler's periodic hook (every 32 ticks of a thread,
// sampler.h): a stat(2), no descriptor kept. A size it has not seen asks
// for a checkpoint dump; the tool takes the difference of two successive
// dumps as the interval's profile (tools/profil/inside_snapshots.h).
// A process that does not run does not answer, and needs not: it has no
// sample to add.
//
// ASYNC-SIGNAL-SAFE: snapshot_requested() runs in the sampling handler;
// no allocation, no lock, errno saved.
#ifndef PROFIL_RUNTIME_SNAPSHOT_REQUEST_H
#define PROFIL_RUNTIME_SNAPSHOT_REQUEST_H

namespace profiling::runtime {

// At start (not in a handler): the request file from PROFIL_SNAPSHOTS, if
// set and absolute; otherwise snapshot_requested() is always false.
void read_snapshot_request_setting();

// ASYNC-SIGNAL-SAFE. Does the tool ask for snapshots? Then they are the
// process's checkpoints too: no dump on the CPU-time schedule in between,
// so that the dump the tool reads is the one it asked for.
bool snapshot_requests_on();

// ASYNC-SIGNAL-SAFE. Has the tool asked for a snapshot since the last
// call that answered true (the file's size changed)? One answer per
// request, whichever thread asks first.
bool snapshot_requested();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_SNAPSHOT_REQUEST_H
