package parallel

import "sync"

// Pool is a fixed set of worker goroutines that run the ranges of For.
// The zero value is not usable; make one with New and release it with Close.
// A nil *Pool runs everything on the calling goroutine (Size 1).
type Pool struct {
	size  int
	mu    sync.Mutex // serialises For calls
	work  chan task
	wg    sync.WaitGroup // ranges of the current For still running
	pmu   sync.Mutex
	perr  any // first panic of the current For
	close sync.Once
}

type task struct {
	f      func(lo, hi int)
	lo, hi int
}

// New starts a pool of size workers (the caller of For counts as one, so
// size-1 goroutines are started); size < 1 is taken as 1.
func New(size int) *Pool {
	size = max(1, size)
	p := &Pool{size: size, work: make(chan task)}
	for range size - 1 {
		go p.worker(p.work)
	}
	return p
}

func (p *Pool) worker(work <-chan task) {
	for t := range work {
		p.run(t)
	}
}

func (p *Pool) run(t task) {
	defer p.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			p.pmu.Lock()
			if p.perr == nil {
				p.perr = r
			}
			p.pmu.Unlock()
		}
	}()
	t.f(t.lo, t.hi)
}

// Size is the number of workers (1 for a nil pool).
func (p *Pool) Size() int {
	if p == nil {
		return 1
	}
	return p.size
}

// Ranges returns the contiguous ranges For splits [0, n) into on parts
// workers: part t is [n*t/parts, n*(t+1)/parts), and a single range [0, n)
// when parts <= 1 or n < 2*parts. It is the whole splitting rule.
func Ranges(n, parts int) [][2]int {
	if parts <= 1 || n < 2*parts {
		return [][2]int{{0, n}}
	}
	r := make([][2]int, parts)
	for t := range parts {
		r[t] = [2]int{n * t / parts, n * (t + 1) / parts}
	}
	return r
}

// For calls f on contiguous ranges covering [0, n) exactly once (see Ranges),
// running them on the pool's workers and the calling goroutine, and returns
// when all have finished. n <= 0 calls nothing. For panics on a closed pool.
func (p *Pool) For(n int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if p == nil || p.size <= 1 || n < 2*p.size {
		f(0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.work == nil {
		panic("parallel: For on a closed Pool")
	}
	parts := p.size
	p.wg.Add(parts)
	for t := 1; t < parts; t++ {
		p.work <- task{f, n * t / parts, n * (t + 1) / parts}
	}
	p.run(task{f, 0, n / parts})
	p.wg.Wait()
	if r := p.perr; r != nil {
		p.perr = nil
		panic(r)
	}
}

// Close stops the workers; it waits for a running For to finish. Closing
// twice (or a nil pool) is a no-op.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.close.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		close(p.work)
		p.work = nil
	})
}
