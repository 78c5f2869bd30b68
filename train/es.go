package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// Genome is a ternary matrix trained by ES: Rows rows of Cols weights as packed TQ2_0 blocks (the bytes package
// quant multiplies and a GGUF file stores), every block's scale d fixed. There is no latent float weight: the
// trained state is the served state.
type Genome struct {
	Name       string
	Rows, Cols int
	Data       []byte // Rows·Cols/256 TQ2_0 blocks
}

// NewGenome makes a genome of uniformly random trits (from stream seed) with every block's scale d, e.g.
// 1/sqrt(cols·2/3), which keeps a row's output at the scale of its input for uniform trits.
func NewGenome(name string, rows, cols int, d float32, seed uint64) (*Genome, error) {
	if cols%quant.QK_K != 0 || rows < 1 {
		return nil, fmt.Errorf("train: genome %s: %d×%d: want rows ≥ 1 and columns a multiple of %d", name, rows, cols, quant.QK_K)
	}
	g := &Genome{Name: name, Rows: rows, Cols: cols, Data: make([]byte, rows*cols/quant.QK_K*quant.BlockTQ2_0Size)}
	h := quant.FP32ToFP16(d)
	for b := range rows * cols / quant.QK_K {
		blk := g.Data[b*quant.BlockTQ2_0Size : (b+1)*quant.BlockTQ2_0Size]
		blk[64], blk[65] = byte(h), byte(h>>8)
	}
	for i := range rows * cols {
		g.set(i, int8(esRand(seed, 0, 0, i)%3))
	}
	return g, nil
}

// GenomeOf wraps TQ2_0 bytes (a student's matrix) as a genome.
func GenomeOf(name string, rows, cols int, data []byte) (*Genome, error) {
	if cols%quant.QK_K != 0 || len(data) != rows*cols/quant.QK_K*quant.BlockTQ2_0Size {
		return nil, fmt.Errorf("train: genome %s: %d bytes are not %d×%d TQ2_0 weights", name, len(data), rows, cols)
	}
	return &Genome{Name: name, Rows: rows, Cols: cols, Data: data}, nil
}

// Matrix is the genome as a quant.Matrix for the deployed kernels.
func (g *Genome) Matrix() quant.Matrix {
	return quant.Matrix{Name: g.Name, Type: gguf.TQ2_0, Rows: g.Rows, Cols: g.Cols, Data: g.Data}
}

// pos returns the byte and shift of weight i (row-major) in the TQ2_0 layout: weight 128h+32n+m of a block is the
// crumb at bits 2n of qs[32h+m].
func (g *Genome) pos(i int) (int, uint) {
	b, r := i/quant.QK_K, i%quant.QK_K
	return b*quant.BlockTQ2_0Size + (r/128)*32 + r%32, uint(2 * ((r % 128) / 32))
}

// code returns weight i's 2-bit code (trit + 1).
func (g *Genome) code(i int) byte {
	at, sh := g.pos(i)
	return g.Data[at] >> sh & 3
}

// set writes code c (0..2) of weight i.
func (g *Genome) set(i int, c int8) {
	at, sh := g.pos(i)
	g.Data[at] = g.Data[at]&^(3<<sh) | byte(c)<<sh
}

// Trits returns the genome's trits (−1, 0, +1), row-major.
func (g *Genome) Trits() []int8 {
	t := make([]int8, g.Rows*g.Cols)
	for i := range t {
		t[i] = int8(g.code(i)) - 1
	}
	return t
}

// splitmix64 is Vigna's SplitMix64 finalizer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// esRand is the counter-based stream of the trit flips: a pure function of (seed, iteration, member, counter),
// so no noise is stored (EGGROLL's and Fucina's es_trits domain).
func esRand(seed uint64, iter, member, i int) uint64 {
	x := splitmix64(seed ^ 0x7472697473) // "trits"
	x = splitmix64(x ^ uint64(iter))
	x = splitmix64(x ^ uint64(member)<<1)
	return splitmix64(x ^ uint64(i))
}

// ESOptions configure ternary ES (Fucina's ternary_* settings).
type ESOptions struct {
	Seed           uint64
	Pairs          int     // antithetic pairs per iteration (population 2·Pairs)
	FlipRate       float64 // fraction of all trits flipped per member (at least 1)
	UpdateFraction float64 // fraction of all trits moved one bin per iteration (at least 1)
	UpdateDecay    float64 // the fraction shrinks as 1/(1 + decay·iteration)
	// Accept keeps an iteration's update only when it does not lower the fitness of the unperturbed genomes
	// (undone otherwise, from its own undo log), and adapts K: ×0.8 after a rejection, ×1.25 after an acceptance
	// (so about half the updates are kept), never above the UpdateFraction's. bankml's addition: Fucina always
	// keeps the update.
	Accept bool
}

// Validate checks the options.
func (o ESOptions) Validate() error {
	if o.Pairs < 1 || !(o.FlipRate > 0 && o.FlipRate <= 1) || !(o.UpdateFraction > 0 && o.UpdateFraction <= 1) || o.UpdateDecay < 0 {
		return fmt.Errorf("train: ES pairs %d, flip rate %g, update fraction %g, decay %g: want pairs ≥ 1, rates in (0, 1], decay ≥ 0",
			o.Pairs, o.FlipRate, o.UpdateFraction, o.UpdateDecay)
	}
	return nil
}

// ES is ternary evolution strategies over packed genomes (Fucina §14.5, EGGROLL's integer recipe, arXiv:2511.16652):
// each member flips a sparse set of trits drawn from the counter-based stream, is evaluated, and is restored from
// an undo log; the antithetic pair's shaped fitness votes on the flipped trits, and the top-K trits by |vote| move
// one bin toward their vote.
type ES struct {
	Genomes []*Genome
	Opt     ESOptions
	Iter    int

	total int
	scale float64 // Accept's factor on K, in (0, 1]
	undo  []undoEntry
	votes []float64
	hit   []bool
	touch []int
}

type undoEntry struct {
	i    int
	code byte
}

// NewES makes the trainer over genomes.
func NewES(genomes []*Genome, opt ESOptions) (*ES, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	es := &ES{Genomes: genomes, Opt: opt}
	for _, g := range genomes {
		es.total += g.Rows * g.Cols
	}
	if es.total == 0 {
		return nil, fmt.Errorf("train: ES over no trits")
	}
	es.votes, es.hit, es.scale = make([]float64, es.total), make([]bool, es.total), 1
	return es, nil
}

// at returns the genome and local index of global trit i.
func (es *ES) at(i int) (*Genome, int) {
	for _, g := range es.Genomes {
		if n := g.Rows * g.Cols; i < n {
			return g, i
		} else {
			i -= n
		}
	}
	panic("train: trit index out of range")
}

// flips returns how many trits a member flips.
func (es *ES) flips() int { return max(1, int(math.Round(es.Opt.FlipRate*float64(es.total)))) }

// flip returns pair p's flip j at iteration it: the trit index and its direction (±1) for the pair's positive
// member (the negative member mirrors it).
func (es *ES) flip(it, p, j int) (int, int8) {
	idx := int(esRand(es.Opt.Seed, it, p, 2*j) % uint64(es.total))
	dir := int8(1)
	if esRand(es.Opt.Seed, it, p, 2*j+1)&1 == 0 {
		dir = -1
	}
	return idx, dir
}

// perturb applies pair p's flips with sign s (±1), each a one-bin move clamped at the rails, logging the old
// codes; restore undoes them in reverse (clamping is lossy, so regenerating the noise could not).
func (es *ES) perturb(p int, s int8) {
	es.undo = es.undo[:0]
	for j := range es.flips() {
		idx, dir := es.flip(es.Iter, p, j)
		g, i := es.at(idx)
		old := g.code(i)
		es.undo = append(es.undo, undoEntry{idx, old})
		g.set(i, min(2, max(0, int8(old)+dir*s)))
	}
}

func (es *ES) restore() {
	for k := len(es.undo) - 1; k >= 0; k-- {
		u := es.undo[k]
		g, i := es.at(u.i)
		g.set(i, int8(u.code))
	}
	es.undo = es.undo[:0]
}

// Applied returns the global indices of the trits changed since the genomes were last unperturbed (a member's
// flips while fitness scores it, or the update while Accept scores it; nil otherwise), so that a fitness can
// recompute only what they touch.
func (es *ES) Applied() []int {
	out := make([]int, len(es.undo))
	for k, u := range es.undo {
		out[k] = u.i
	}
	return out
}

// Step runs one iteration: every member of the population is perturbed, scored by fitness (higher is better,
// computed from the genomes as they are at the call) and restored; then the update. It returns the members'
// fitness, the positive member of pair p at 2p and the negative at 2p+1.
func (es *ES) Step(fitness func() float64) []float64 {
	P := es.Opt.Pairs
	var f0 float64
	if es.Opt.Accept {
		f0 = fitness()
	}
	fit := make([]float64, 2*P)
	for p := range P {
		for k, s := range []int8{1, -1} {
			es.perturb(p, s)
			fit[2*p+k] = fitness()
			es.restore()
		}
	}
	// centered ranks in [−0.5, 0.5] (ties share the mean rank), folded per antithetic pair
	order := make([]int, len(fit))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case fit[a] < fit[b]:
			return -1
		case fit[a] > fit[b]:
			return 1
		}
		return 0
	})
	shaped := make([]float64, len(fit))
	for lo := 0; lo < len(order); {
		hi := lo
		for hi+1 < len(order) && fit[order[hi+1]] == fit[order[lo]] {
			hi++
		}
		r := float64(lo+hi) / 2
		for k := lo; k <= hi; k++ {
			shaped[order[k]] = r/float64(len(fit)-1) - 0.5
		}
		lo = hi + 1
	}
	es.touch = es.touch[:0]
	for p := range P {
		c := shaped[2*p] - shaped[2*p+1]
		for j := range es.flips() {
			idx, dir := es.flip(es.Iter, p, j)
			if !es.hit[idx] {
				es.hit[idx] = true
				es.touch = append(es.touch, idx)
			}
			es.votes[idx] += c * float64(dir)
		}
	}
	k := int(math.Round(es.scale * es.Opt.UpdateFraction * float64(es.total) / (1 + es.Opt.UpdateDecay*float64(es.Iter))))
	k = min(len(es.touch), max(1, k))
	slices.SortFunc(es.touch, func(a, b int) int {
		va, vb := math.Abs(es.votes[a]), math.Abs(es.votes[b])
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return a - b
	})
	es.undo = es.undo[:0]
	for _, idx := range es.touch[:k] {
		if v := es.votes[idx]; v != 0 {
			g, i := es.at(idx)
			old := g.code(i)
			c := int8(old)
			if v > 0 {
				c = min(2, c+1)
			} else {
				c = max(0, c-1)
			}
			es.undo = append(es.undo, undoEntry{idx, old})
			g.set(i, c)
		}
	}
	if es.Opt.Accept {
		if fitness() < f0 {
			es.restore()
			es.scale = max(es.scale*0.8, 1/float64(es.total))
		} else {
			es.scale = min(1, es.scale*1.25)
		}
	}
	es.undo = es.undo[:0]
	for _, idx := range es.touch {
		es.votes[idx], es.hit[idx] = 0, false
	}
	es.Iter++
	return fit
}
