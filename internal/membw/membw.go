// Package membw measures memory read bandwidth: the floor under any kernel
// that streams its weights once (DESIGN.md §7), for bankml bench.
//
// Design record
//
//   - What: Read streams a buffer once with wide loads (AVX2 on amd64, a
//     word loop elsewhere) and returns a checksum so that the reads cannot be
//     elided; Measure times Read over a buffer much larger than the caches
//     on 1 or more goroutines, each reading its own contiguous part.
//   - Deliberate differences: no stores, no prefetch hints: the pattern of
//     a matvec's weight stream. Timings are wall-clock; on a busy machine
//     they fall, so bench reports them beside the kernels measured in the
//     same run.
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

var sink uint64
