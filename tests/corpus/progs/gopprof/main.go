// A Go program that profiles itself with runtime/pprof (Go's profiler
// installs its own SIGPROF handler and per-thread CPU timers) while
// goroutines burn CPU. It prints its result and writes cpu.pprof.
//
// The import of "C" makes it a cgo program, linked dynamically against
// glibc: a pure-Go binary is static, and a static program cannot be
// preloaded, so profil run would only say so. Real Go programs on Debian
// are often cgo (os/user, net with the libc resolver).
package main

// int c_zero(void) { return 0; }
import "C"

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
)

func burn(seed uint64, n int) uint64 {
	x := seed
	var sum uint64
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		sum += x >> 60
	}
	return sum
}

func main() {
	f, err := os.Create("cpu.pprof")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sums := make([]uint64, 3)
	var wg sync.WaitGroup
	for g := range sums {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sums[g] = burn(uint64(g+1), 330000000)
		}(g)
	}
	wg.Wait()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("sums", sums, int(C.c_zero()))
}
