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
