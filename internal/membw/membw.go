// Package membw measures memory read bandwidth, the floor under any kernel that streams its weights once, for
// bankml bench (docs/PERFORMANCE.md reports it beside the kernels).
//
// # Design record
//
// What. [Read] streams a buffer once with wide loads (AVX2 on amd64, a word loop elsewhere) and returns a
// checksum so that the reads cannot be elided; [Measure] times Read over a buffer much larger than the caches on
// 1 or more goroutines, each reading its own contiguous part.
//
// Follows. The access pattern of a matvec's weight stream: sequential reads, each byte once.
//
// Deliberate differences. No stores and no prefetch hints, unlike a copy benchmark (STREAM's triad).
//
// Determinism. The checksum is a pure function of the bytes. Timings are wall-clock and fall on a busy machine,
// so bench reports them beside the kernels measured in the same run, as ratios.
package membw

import (
	"sync"
	"time"
)

// Read reads every byte of b (len(b) a multiple of 128 is fastest; the rest
// is read bytewise) and returns a checksum of them.
func Read(b []byte) uint64 {
	n := len(b) &^ 127
	var s uint64
	if n > 0 {
		s = readWide(b[:n])
	}
	for _, v := range b[n:] {
		s += uint64(v)
	}
	return s
}

// Measure returns the read bandwidth in bytes per second of threads
// goroutines reading buf once, each its own 1/threads of it (a whole
// multiple of 4096 bytes).
func Measure(buf []byte, threads int) float64 {
	threads = max(1, threads)
	part := len(buf) / threads &^ 4095
	var wg sync.WaitGroup
	sums := make([]uint64, threads)
	t0 := time.Now()
	for t := range threads {
		wg.Go(func() { sums[t] = Read(buf[t*part : (t+1)*part]) })
	}
	wg.Wait()
	el := time.Since(t0).Seconds()
	sink = sums[0]
	return float64(part*threads) / el
}

//lint:ignore U1000 a sink: the measured loads must not be optimised away
var sink uint64
