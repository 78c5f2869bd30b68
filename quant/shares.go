package quant

import "sync/atomic"

// share is one worker's share of a packed matrix for the pool (Work.run):
// the units [front, back) — bands of q1Band groups for the Q1_0
// lookup-table tile, groups for the other packed tiles — packed front<<32 |
// back in one word. The worker that takes the share walks it from the front
// one unit at a time, so that its reads are one front-to-back stream whose
// prefetches (tileQ1_0LUTGroups; the other tiles prefetch a fixed distance
// ahead) run on across units; a worker done with its own share takes units
// from the back of the share with the most left, so that no worker waits
// for a slow one by more than a unit. One compare-and-swap per take hands
// every unit out exactly once.
type share struct {
	fb atomic.Uint64
	_  [56]byte // one share per cache line
}

// set makes the share the units [front, back).
func (p *share) set(front, back int) { p.fb.Store(uint64(front)<<32 | uint64(back)) }

// takeFront takes the front unit; back is the share's back after the take
// (how far the taker may prefetch). ok is false when the share is empty.
func (p *share) takeFront() (u, back int, ok bool) {
	for {
		v := p.fb.Load()
		f, b := int(v>>32), int(uint32(v))
		if f >= b {
			return 0, 0, false
		}
		if p.fb.CompareAndSwap(v, uint64(f+1)<<32|uint64(b)) {
			return f, b, true
		}
	}
}

// takeBack takes the back unit; ok is false when the share is empty.
func (p *share) takeBack() (u int, ok bool) {
	for {
		v := p.fb.Load()
		f, b := int(v>>32), int(uint32(v))
		if f >= b {
			return 0, false
		}
		if p.fb.CompareAndSwap(v, uint64(f)<<32|uint64(b-1)) {
			return b - 1, true
		}
	}
}

// left is the number of units the share still holds.
func (p *share) left() int {
	v := p.fb.Load()
	return max(0, int(uint32(v))-int(v>>32))
}

// walkShares is a worker's walk over the shares parts: share part from
// the front, run(u, back, true) for its first unit and run(u, back, false)
// for the next ones (back: the share's back after the take), then units
// from the back of the share with the most left, run(u, u+1, true), until
// every share is empty.
func walkShares(parts []share, part int, run func(u, back int, start bool)) {
	start := true
	for {
		u, back, ok := parts[part].takeFront()
		if !ok {
			break
		}
		run(u, back, start)
		start = false
	}
	for {
		best, most := -1, 0
		for i := range parts {
			if n := parts[i].left(); n > most {
				best, most = i, n
			}
		}
		if best < 0 {
			return
		}
		if u, ok := parts[best].takeBack(); ok {
			run(u, u+1, true)
		}
	}
}

// runShares hands the job's units groups to the pool as one share per
// worker (walkShares) in units of unit groups: bands (q1Band) for the Q1_0
// lookup-table walk (matJob.q1LUT), single groups for the other packed tiles.
func (w *Work) runShares(units, unit int) {
	j := &w.job
	nu := (units + unit - 1) / unit
	parts := min(w.pool.Size(), nu)
	for i := range parts {
		w.shares[i].set(nu*i/parts, nu*(i+1)/parts)
	}
	j.parts, j.unit = parts, unit
	w.pool.Run(parts, 1, j)
	j.parts = 0
}

// doShare runs share part of the job's units on worker (walkShares): each
// Q1_0 band through doPackedQ1LUTRange, whose prefetches may run up to the
// share's back, each group of the other packed tiles through doPacked.
func (j *matJob) doShare(worker, part int) {
	groups := j.m.packedRows().groups
	walkShares(j.w.shares[:j.parts], part, func(u, back int, start bool) {
		g0 := u * j.unit
		g1 := min(groups, g0+j.unit)
		if j.q1LUT() {
			j.doPackedQ1LUTRange(worker, g0, g1, min(groups, back*j.unit), start)
		} else {
			j.doPacked(worker, g0, g1)
		}
	})
}
