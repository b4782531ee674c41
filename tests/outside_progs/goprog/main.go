// A pure-Go program (static: no dynamic loader, so no preload could enter
// it) with one known hot function, for profil run from outside
// (tests/outside_test.cc, Outside.GoProgramIsSampledFromOutside). It spins
// in hotLoop for the seconds given of the process's CPU time (not wall
// time: a busy machine still gives it the same number of samples) and
// prints the sum, so that the loop is not optimised away.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The process's CPU time, user and system.
func processCPU() time.Duration {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

//go:noinline
func hotLoop(n int) uint64 {
	var x uint64 = 88172645463325252
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	seconds := 0.5
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	want := time.Duration(seconds * float64(time.Second))
	start := processCPU()
	var sum uint64
	for processCPU()-start < want {
		sum += hotLoop(200000)
	}
	fmt.Println("sum", sum)
}
