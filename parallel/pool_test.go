package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestForCoversEachIndexOnce: for every pool size and n, For calls f on
// contiguous ranges that cover [0, n) exactly once, and they are Ranges(n, size).
func TestForCoversEachIndexOnce(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 8} {
		p := New(size)
		for n := range 40 {
			hits := make([]int32, n)
			var calls atomic.Int32
			p.For(n, func(lo, hi int) {
				calls.Add(1)
				if lo >= hi {
					t.Errorf("size %d n %d: empty range [%d,%d)", size, n, lo, hi)
				}
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("size %d n %d: index %d run %d times", size, n, i, h)
				}
			}
			if n > 0 && int(calls.Load()) != len(Ranges(n, p.Size())) {
				t.Errorf("size %d n %d: %d calls, Ranges gives %d", size, n, calls.Load(), len(Ranges(n, p.Size())))
			}
		}
		p.Close()
		p.Close() // idempotent
	}
}

// TestNoGoroutinePerCall: the workers are started by New, not by For, and
// stopped by Close.
func TestNoGoroutinePerCall(t *testing.T) {
	before := runtime.NumGoroutine()
	p := New(4)
	started := runtime.NumGoroutine()
	if started-before != 3 {
		t.Errorf("New(4) started %d goroutines, want 3", started-before)
	}
	var peak atomic.Int32
	for range 100 {
		p.For(100, func(lo, hi int) {
			if g := int32(runtime.NumGoroutine()); g > peak.Load() {
				peak.Store(g)
			}
		})
	}
	if int(peak.Load()) > started {
		t.Errorf("For ran with %d goroutines, %d after New", peak.Load(), started)
	}
	p.Close()
	for range 1000 {
		if runtime.NumGoroutine() <= before {
			return
		}
		runtime.Gosched()
	}
	t.Errorf("%d goroutines after Close, %d before New", runtime.NumGoroutine(), before)
}

// TestNilPoolRunsInline: a nil pool is a one-worker pool.
func TestNilPoolRunsInline(t *testing.T) {
	var p *Pool
	sum := 0
	p.For(10, func(lo, hi int) { sum += hi - lo })
	if sum != 10 || p.Size() != 1 {
		t.Errorf("sum %d size %d", sum, p.Size())
	}
	p.Close()
}

// TestPanicReachesCaller: a panic in a worker's range is re-raised by For,
// and the pool stays usable.
func TestPanicReachesCaller(t *testing.T) {
	p := New(2)
	defer p.Close()
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v", r)
			}
		}()
		p.For(10, func(lo, hi int) {
			if lo > 0 {
				panic("boom")
			}
		})
	}()
	n := 0
	p.For(10, func(lo, hi int) {})
	p.For(1, func(lo, hi int) { n = hi })
	if n != 1 {
		t.Error("pool unusable after a panic")
	}
}

// TestClosedPoolPanics: For on a closed pool (with work to share) panics.
func TestClosedPoolPanics(t *testing.T) {
	p := New(2)
	p.Close()
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	p.For(10, func(lo, hi int) {})
}

// countJob records how often each index is run and by which worker.
type countJob struct {
	hits    []int32
	workers []int32
	chunk   int
	bad     atomic.Int32
}

func (j *countJob) Do(worker, lo, hi int) {
	if lo%j.chunk != 0 || (hi-lo != j.chunk && hi != len(j.hits)) {
		j.bad.Add(1)
	}
	for i := lo; i < hi; i++ {
		atomic.AddInt32(&j.hits[i], 1)
		atomic.StoreInt32(&j.workers[i], int32(worker))
	}
}

// TestRunCoversEachIndexOnce: Run hands out chunks of the given size that
// cover [0, n) exactly once, worker ids stay below Size(), for pools of 1
// to 8 workers and many (n, chunk) pairs, call after call.
func TestRunCoversEachIndexOnce(t *testing.T) {
	for _, size := range []int{1, 2, 3, 8} {
		p := New(size)
		for n := range 70 {
			for _, chunk := range []int{1, 3, 16, 100} {
				j := &countJob{hits: make([]int32, n), workers: make([]int32, n), chunk: chunk}
				p.Run(n, chunk, j)
				for i, h := range j.hits {
					if h != 1 {
						t.Fatalf("size %d n %d chunk %d: index %d run %d times", size, n, chunk, i, h)
					}
					if w := j.workers[i]; w < 0 || int(w) >= p.Size() {
						t.Fatalf("size %d: worker id %d", size, w)
					}
				}
				if j.bad.Load() != 0 {
					t.Fatalf("size %d n %d chunk %d: a range is not one chunk", size, n, chunk)
				}
			}
		}
		p.Close()
	}
}

type nopJob struct{}

func (*nopJob) Do(_, _, _ int) {}

// TestRunAllocatesNothing: Run with a pointer job allocates nothing.
func TestRunAllocatesNothing(t *testing.T) {
	p := New(2)
	defer p.Close()
	var j nopJob
	if a := testing.AllocsPerRun(100, func() { p.Run(1000, 10, &j) }); a != 0 {
		t.Errorf("%v allocations per Run", a)
	}
}

type panicJob struct{}

func (*panicJob) Do(_, lo, _ int) {
	if lo >= 50 {
		panic("boom")
	}
}

// TestRunPanicReachesCaller: a panic in a chunk is re-raised by Run and the
// pool stays usable.
func TestRunPanicReachesCaller(t *testing.T) {
	p := New(2)
	defer p.Close()
	for range 20 {
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v", r)
				}
			}()
			p.Run(100, 1, &panicJob{})
		}()
	}
	j := &countJob{hits: make([]int32, 10), workers: make([]int32, 10), chunk: 2}
	p.Run(10, 2, j)
	for i, h := range j.hits {
		if h != 1 {
			t.Fatalf("after panics: index %d run %d times", i, h)
		}
	}
}

// BenchmarkRunEmpty is the fixed cost of one Run on two workers (a job with
// nothing to do): what the pool adds to each matmul.
func BenchmarkRunEmpty(b *testing.B) {
	p := New(2)
	defer p.Close()
	var j nopJob
	for b.Loop() {
		p.Run(256, 16, &j)
	}
}
