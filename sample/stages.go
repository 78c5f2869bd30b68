package sample

import (
	"math"
	mrand "math/rand/v2"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/internal/stdcpp"
)

// stage is one llama_sampler of the chain: apply transforms the candidates,
// accept sees every accepted token, reset restores the initial state.
type stage interface {
	apply(c *candidates, buf *[]TokenData)
	accept(tok int32)
	reset()
}

// noState is embedded by stages without accept or reset (llama.cpp's NULL
// interface entries).
type noState struct{}

func (noState) accept(int32) {}
func (noState) reset()       {}

// rngSeed is get_rng_seed: DefaultSeed draws a random seed (llama.cpp reads
// std::random_device); any other seed is used as given.
func rngSeed(seed uint32) uint32 {
	if seed == DefaultSeed {
		return mrand.Uint32()
	}
	return seed
}

// logitBias is llama_sampler_logit_bias.
type logitBias struct {
	noState
	bias     []LogitBias
	toSearch []LogitBias
}

func (s *logitBias) apply(c *candidates, _ *[]TokenData) {
	s.toSearch = s.toSearch[:0]
	// Candidates still in vocabulary order (index == id) are biased directly.
	for _, lb := range s.bias {
		if lb.Token >= 0 && int(lb.Token) < len(c.data) && c.data[lb.Token].ID == lb.Token {
			c.data[lb.Token].Logit += lb.Bias
		} else {
			s.toSearch = append(s.toSearch, lb)
		}
	}
	if len(s.toSearch) == 0 {
		return
	}
	for i := range c.data {
		for _, lb := range s.toSearch {
			if c.data[i].ID == lb.Token {
				c.data[i].Logit += lb.Bias
				break
			}
		}
	}
}

// ring is llama.cpp's ring_buffer<llama_token>: a fixed-capacity deque.
type ring struct {
	data           []int32
	sz, first, pos int
}

func newRing(capacity int) ring { return ring{data: make([]int32, capacity)} }

func (r *ring) push(v int32) {
	if len(r.data) == 0 {
		return // llama.cpp throws "ring buffer: capacity is zero"; never pushed then
	}
	if r.sz == len(r.data) {
		r.first = (r.first + 1) % len(r.data)
	} else {
		r.sz++
	}
	r.data[r.pos] = v
	r.pos = (r.pos + 1) % len(r.data)
}

func (r *ring) front() int32 { return r.data[r.first] }

// rat returns the i-th token from the end (0 is the last pushed).
func (r *ring) rat(i int) int32 { return r.data[(r.first+r.sz-i-1)%len(r.data)] }

func (r *ring) clear() { r.sz, r.first, r.pos = 0, 0, 0 }

// penalties is llama_sampler_penalties: repetition, frequency and presence
// penalties over the last penalty_last_n accepted tokens.
type penalties struct {
	lastN                 int32
	repeat, freq, present float32
	prev                  ring
	count                 map[int32]int
}

func (s *penalties) accept(tok int32) {
	s.count[tok]++
	if s.prev.sz >= int(s.lastN) {
		old := s.prev.front()
		s.count[old]--
		if s.count[old] == 0 {
			delete(s.count, old)
		}
	}
	s.prev.push(tok)
}

func (s *penalties) apply(c *candidates, _ *[]TokenData) {
	for i := range c.data {
		n, ok := s.count[c.data[i].ID]
		if !ok {
			continue
		}
		if c.data[i].Logit <= 0 {
			c.data[i].Logit *= s.repeat
		} else {
			c.data[i].Logit /= s.repeat
		}
		c.data[i].Logit -= float32(float32(n)*s.freq) + float32(1*s.present)
	}
	c.sorted = false
}

func (s *penalties) reset() {
	s.prev.clear()
	clear(s.count)
}

// topNSigma is llama_sampler_top_n_sigma: logits below max - n*σ (over the
// finite candidates) become -Inf.
type topNSigma struct {
	noState
	n float32
}

func (s *topNSigma) apply(c *candidates, _ *[]TokenData) {
	if len(c.data) <= 1 {
		return
	}
	negInf := float32(math.Inf(-1))
	maxL := c.data[0].Logit
	var sum float32
	valid := 0
	for _, d := range c.data {
		if d.Logit != negInf {
			maxL = maxf(maxL, d.Logit)
			sum += d.Logit
			valid++
		}
	}
	var mean float32
	if valid > 0 {
		mean = sum / float32(valid)
	}
	var acc float32
	for _, d := range c.data {
		if d.Logit != negInf {
			x := float64(d.Logit - mean)
			acc = float32(float64(acc) + x*x) // pow(x, 2) in double, added in double
		}
	}
	var std float32
	if valid > 0 {
		std = float32(math.Sqrt(float64(acc / float32(valid))))
	}
	cut := maxL - float32(s.n*std)
	for i := range c.data {
		if c.data[i].Logit < cut {
			c.data[i].Logit = negInf
		}
	}
}

// topK is llama_sampler_top_k.
type topK struct {
	noState
	k int32
}

func (s *topK) apply(c *candidates, buf *[]TokenData) {
	k := min(int(s.k), len(c.data))
	if !c.sorted {
		c.partialSortInplace(k, buf)
	}
	c.data = c.data[:k]
}

// typical is llama_sampler_typical (locally typical sampling).
type typical struct {
	noState
	p       float32
	minKeep int
	shifted []float32
	idx     []int
	tmp     []TokenData
}

func (s *typical) apply(c *candidates, buf *[]TokenData) {
	c.softmax(true, buf)
	var entropy float32
	for _, d := range c.data {
		entropy += float32(-d.P * fmath.Logf(d.P))
	}
	s.shifted = s.shifted[:0]
	s.idx = s.idx[:0]
	for i, d := range c.data {
		s.shifted = append(s.shifted, float32(math.Abs(float64(-fmath.Logf(d.P)-entropy))))
		s.idx = append(s.idx, i)
	}
	stdcpp.Sort(s.idx, func(a, b int) bool { return s.shifted[a] < s.shifted[b] })
	var cum float32
	last := len(s.idx)
	for i, j := range s.idx {
		cum += c.data[j].P
		if cum > s.p && (s.minKeep == 0 || i >= s.minKeep-1) {
			last = i + 1
			break
		}
	}
	s.tmp = s.tmp[:0]
	for _, j := range s.idx[:last] {
		s.tmp = append(s.tmp, c.data[j])
	}
	c.data = c.data[:copy(c.data, s.tmp)]
	c.sorted = false
}

// topP is llama_sampler_top_p (nucleus sampling).
type topP struct {
	noState
	p       float32
	minKeep int
	bufSort []TokenData
}

func (s *topP) apply(c *candidates, buf *[]TokenData) {
	c.softmax(false, buf)
	k := len(c.data)
	pdata := c.data
	if !c.sorted && len(c.data) > 1024 {
		// Adaptive top-k: sort only the top 256 first.
		k = min(256, len(c.data))
		s.bufSort = bucketPartialSort(c.data, k, s.bufSort)
		pdata = s.bufSort
	} else if !c.sorted {
		c.partialSortInplace(k, buf)
		pdata = c.data
	}
	var cum float32
	last := len(c.data)
	for i := range len(c.data) {
		cum += pdata[i].P
		if cum >= s.p && i+1 >= s.minKeep {
			last = i + 1
			break
		}
		if !c.sorted && i == k-1 {
			// Past the heuristic's top k: sort everything.
			k = len(c.data)
			s.bufSort = bucketPartialSort(c.data, k, s.bufSort)
			pdata = s.bufSort
		}
	}
	if !c.sorted {
		copy(c.data, s.bufSort[:last])
		c.sorted = true
	}
	c.data = c.data[:last]
}

// minP is llama_sampler_min_p.
type minP struct {
	noState
	p        float32
	minKeep  int
	filtered []TokenData
}

func (s *minP) apply(c *candidates, buf *[]TokenData) {
	if len(c.data) == 0 {
		return
	}
	applied := false
	if !c.sorted {
		maxL := float32(-math.MaxFloat32)
		for _, d := range c.data {
			maxL = maxf(maxL, d.Logit)
		}
		minL := maxL + fmath.Logf(s.p)
		s.filtered = s.filtered[:0]
		for _, d := range c.data {
			if d.Logit >= minL {
				s.filtered = append(s.filtered, d)
			}
		}
		if len(s.filtered) > 0 && len(s.filtered) >= s.minKeep {
			c.data = c.data[:copy(c.data, s.filtered)]
			applied = true
		}
	}
	if !applied {
		if !c.sorted {
			c.partialSortInplace(len(c.data), buf)
		}
		minL := c.data[0].Logit + fmath.Logf(s.p)
		i := 1
		for ; i < len(c.data); i++ {
			if c.data[i].Logit < minL && i >= s.minKeep {
				break
			}
		}
		c.data = c.data[:i]
	}
}

// xtc is llama_sampler_xtc (exclude top choices).
type xtc struct {
	noState
	probability, threshold float32
	minKeep                int
	seed                   uint32
	rng                    *stdcpp.MT19937
}

func (s *xtc) apply(c *candidates, buf *[]TokenData) {
	if len(c.data) < 2 {
		return
	}
	if stdcpp.UniformReal32(s.rng, 0, 1) > s.probability {
		return
	}
	c.softmax(true, buf)
	posLast := 0
	for i, d := range c.data {
		if d.P >= s.threshold {
			posLast = i
		} else {
			break
		}
	}
	if len(c.data)-posLast >= s.minKeep && posLast > 0 {
		c.data = c.data[posLast:]
	}
}

func (s *xtc) reset() { s.rng.Seed(rngSeed(s.seed)) }

// tempExt is llama_sampler_temp_ext: temperature, or dynamic temperature
// from the normalised entropy when delta > 0.
type tempExt struct {
	noState
	temp, delta, exponent float32
}

func (s *tempExt) apply(c *candidates, buf *[]TokenData) {
	if !(s.delta > 0) {
		c.temp(s.temp)
		return
	}
	minTemp := maxf(0, s.temp-s.delta)
	maxTemp := s.temp + s.delta
	if len(c.data) <= 1 {
		return
	}
	maxEntropy := -fmath.Logf(1 / float32(len(c.data)))
	c.softmax(true, buf)
	var entropy float32
	for _, d := range c.data {
		if d.P > 0 {
			entropy -= float32(d.P * fmath.Logf(d.P))
		}
	}
	norm := entropy / maxEntropy
	dyn := minTemp + float32((maxTemp-minTemp)*fmath.Powf(norm, s.exponent))
	c.temp(dyn)
	// llama.cpp re-normalises in double with glibc's exp; every later reader
	// of p recomputes it (the draw always does), so math.Exp stands in here.
	maxL := float64(c.data[0].Logit)
	var sum float64
	for i := range c.data {
		p := math.Exp(float64(c.data[i].Logit) - maxL)
		c.data[i].P = float32(p)
		sum += p
	}
	for i := range c.data {
		c.data[i].P = float32(float64(c.data[i].P) / sum)
	}
}

// dist is llama_sampler_dist: the seeded draw.
type dist struct {
	noState
	seed, seedCur uint32
	rng           *stdcpp.MT19937
}

func (s *dist) apply(c *candidates, _ *[]TokenData) {
	if len(c.data) == 0 {
		c.selected = -1
		return
	}
	c.selected = 0
	if len(c.data) == 1 {
		stdcpp.UniformReal64(s.rng, 0, 1) // one draw per output, as the backend path does
		c.data[0].P = 1
		return
	}
	maxL := c.data[0].Logit
	if !c.sorted {
		for i := 1; i < len(c.data); i++ {
			maxL = maxf(maxL, c.data[i].Logit)
		}
	}
	var sum float64
	for i := range c.data {
		p := fmath.Expf(c.data[i].Logit - maxL)
		c.data[i].P = p
		sum += float64(p)
	}
	// Draw and normalise in one pass: the first candidate whose running sum
	// reaches sum*u.
	target := float64(sum * stdcpp.UniformReal64(s.rng, 0, 1))
	var run float64
	found := false
	for i := range c.data {
		if !found {
			run += float64(c.data[i].P)
			if run >= target {
				c.selected, found = i, true
			}
		}
		c.data[i].P = float32(float64(c.data[i].P) / sum)
	}
	if !found {
		c.selected = len(c.data) - 1
	}
}

func (s *dist) reset() {
	s.seedCur = rngSeed(s.seed)
	s.rng.Seed(s.seedCur)
}
