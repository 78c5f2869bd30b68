package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Job is work split into chunks: Do computes [lo, hi) on behalf of worker
// (0 <= worker < Pool.Size(); worker 0 is the goroutine that called Run),
// so that a job can keep per-worker scratch. Do must be safe to run
// concurrently on disjoint ranges.
type Job interface {
	Do(worker, lo, hi int)
}

// Pool is a fixed set of worker goroutines that run the chunks of Run and the
// ranges of For. The zero value is not usable; make one with New and release
// it with Close. A nil *Pool runs everything on the calling goroutine (Size 1).
type Pool struct {
	size  int
	mu    sync.Mutex // serialises Run/For calls
	slots []slot     // workers 1..size-1
	epoch uint64     // under mu
	next  atomic.Int64
	pmu   sync.Mutex
	perr  any // first panic of the current Run
	close sync.Once
	done  atomic.Bool
	wg    sync.WaitGroup // the workers, until they return
}

// slot is one worker's mailbox. Run writes job, n and chunk, then posts the
// epoch (state = epoch<<2 | posted). The worker takes it (CAS to running),
// runs chunks and stores done; Run, once out of chunks itself, revokes a post
// the worker has not taken yet (CAS to done), so a worker the OS has not
// scheduled never holds Run up, and waits only for a worker that is
// running. The worker reads the job fields only after taking the post, and
// Run does not write them again before the state is done: they need no lock.
type slot struct {
	state atomic.Uint64
	job   Job
	n     int
	chunk int
	wake  chan struct{}
	_     [64]byte // keep slots on separate cache lines
}

// Slot states (the low two bits of slot.state; the rest is the epoch).
const (
	slotDone    = 0
	slotPosted  = 1
	slotRunning = 2
)

// spinRounds is how many times a worker (or Run's caller) polls for work (or
// for the workers' acks) before parking: long enough to bridge the short
// serial stretches between the matmuls of one token, short enough not to
// burn a core through an idle period.
const spinRounds = 20000

// New starts a pool of size workers (the caller of Run counts as one, so
// size-1 goroutines are started); size < 1 is taken as 1.
func New(size int) *Pool {
	size = max(1, size)
	p := &Pool{size: size, slots: make([]slot, size-1)}
	for i := range p.slots {
		p.slots[i].wake = make(chan struct{}, 1)
		p.wg.Add(1)
		go p.worker(i + 1)
	}
	return p
}

func (p *Pool) worker(id int) {
	defer p.wg.Done()
	s := &p.slots[id-1]
	for {
		st := s.state.Load()
		for spin := 0; st&3 != slotPosted && spin < spinRounds; spin++ {
			if spin%64 == 63 {
				if p.done.Load() {
					return
				}
				runtime.Gosched()
			}
			st = s.state.Load()
		}
		if st&3 != slotPosted {
			<-s.wake
			if p.done.Load() {
				return
			}
			continue
		}
		if !s.state.CompareAndSwap(st, st&^3|slotRunning) {
			continue // revoked: Run finished without us
		}
		p.chunks(id, s.job, s.n, s.chunk)
		s.state.Store(st &^ 3) // done
	}
}

// chunks claims and runs chunks of the current Run until none is left.
func (p *Pool) chunks(worker int, j Job, n, chunk int) {
	defer func() {
		if r := recover(); r != nil {
			p.pmu.Lock()
			if p.perr == nil {
				p.perr = r
			}
			p.pmu.Unlock()
			// Claim the rest so that the others stop too.
			p.next.Store(int64(n))
		}
	}()
	for {
		lo := int(p.next.Add(int64(chunk))) - chunk
		if lo >= n {
			return
		}
		j.Do(worker, lo, min(n, lo+chunk))
	}
}

// Size is the number of workers (1 for a nil pool).
func (p *Pool) Size() int {
	if p == nil {
		return 1
	}
	return p.size
}

// Run calls j.Do on chunks [lo, lo+chunk) covering [0, n) exactly once
// (the last one shorter), taken by the workers and the calling goroutine
// in whatever order they come free, and returns when all have finished.
// Which worker runs which chunk is not deterministic: a job whose outputs
// depend only on the index (as quant.MatMul's do) gets the same bits for
// any pool. A nil or one-worker pool, or a single chunk, calls j.Do(0, 0, n)
// inline. n <= 0 calls nothing; chunk < 1 is taken as 1. Run allocates
// nothing. A panic in Do is re-raised (its value) in the caller after every
// worker has stopped. Run panics on a closed pool.
func (p *Pool) Run(n, chunk int, j Job) {
	if n <= 0 {
		return
	}
	chunk = max(1, chunk)
	if p == nil || p.size <= 1 || n <= chunk {
		j.Do(0, 0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done.Load() {
		panic("parallel: Run on a closed Pool")
	}
	p.epoch++
	e := p.epoch << 2
	p.next.Store(0)
	for i := range p.slots {
		s := &p.slots[i]
		s.job, s.n, s.chunk = j, n, chunk
		s.state.Store(e | slotPosted)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	p.chunks(0, j, n, chunk)
	for i := range p.slots {
		s := &p.slots[i]
		if !s.state.CompareAndSwap(e|slotPosted, e|slotDone) { // not revoked: it is running
			for spin := 0; s.state.Load() != e|slotDone; spin++ {
				if spin >= spinRounds || spin%64 == 63 {
					runtime.Gosched()
				}
			}
		}
		s.job = nil
	}
	if r := p.perr; r != nil {
		p.perr = nil
		panic(r)
	}
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

// forJob runs For's ranges as chunks of one part each.
type forJob struct {
	f        func(lo, hi int)
	n, parts int
}

func (j *forJob) Do(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		j.f(j.n*t/j.parts, j.n*(t+1)/j.parts)
	}
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
	p.Run(p.size, 1, &forJob{f, n, p.size})
}

// Close stops the workers and returns when they have returned; it waits
// for a running Run to finish. Closing twice (or a nil pool) is a no-op.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.close.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done.Store(true)
		for i := range p.slots {
			close(p.slots[i].wake)
		}
	})
	p.wg.Wait()
}
