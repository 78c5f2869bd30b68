package ternary

import (
	"fmt"
	"math"
	"slices"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// Options are the settings of the PTQTP solver, Fucina's ptqtp.Options (src/ptqtp.zig) field for field; the zero
// value is not valid, start from [DefaultOptions].
type Options struct {
	// Planes is K, the number of trit-planes: 1, 2 (the paper's dual form) or 3 (Fucina's extension).
	Planes int
	// GroupSize is the weights per group, each with one scale per plane: 256 (planes are TQ2_0 tensors, Fucina's
	// packed size) or 64 (planes are Q2_0 tensors: bankml's extension, see the package documentation).
	GroupSize int
	// MaxIterations caps the alternating solve per group (50).
	MaxIterations int
	// Epsilon is the convergence bound on ‖α − α_prev‖₂ (1e-4).
	Epsilon float32
	// Lambda0, LambdaMax and KappaMax are the ridge floor (1e-8) and ceiling (1) and the condition estimate above
	// which λ escalates ×10 (1e6).
	Lambda0, LambdaMax, KappaMax float32
}

// DefaultOptions returns Fucina's defaults: K = 2, groups of 256, 50 iterations, ε = 1e-4, λ0 = 1e-8, λmax = 1,
// κmax = 1e6.
func DefaultOptions() Options {
	return Options{Planes: 2, GroupSize: 256, MaxIterations: 50, Epsilon: 1e-4, Lambda0: 1e-8, LambdaMax: 1, KappaMax: 1e6}
}

// Validate checks the options as Fucina's Options.validate does (planes 1..3, a positive iteration cap, ε ≥ 0,
// λ0 > 0, λmax ≥ λ0, κmax ≥ 1; NaN fails every comparison) and that GroupSize is 256 or 64.
func (o Options) Validate() error {
	switch {
	case o.Planes < 1 || o.Planes > 3:
		return fmt.Errorf("ternary: PTQTP planes %d, want 1, 2 or 3", o.Planes)
	case o.GroupSize != FormatTQ2_0.Block && o.GroupSize != FormatQ2_0.Block:
		return fmt.Errorf("ternary: PTQTP group size %d, want 256 (TQ2_0 planes) or 64 (Q2_0 planes)", o.GroupSize)
	case o.MaxIterations < 1:
		return fmt.Errorf("ternary: PTQTP max iterations %d, want at least 1", o.MaxIterations)
	case !(o.Epsilon >= 0):
		return fmt.Errorf("ternary: PTQTP epsilon %g, want >= 0", o.Epsilon)
	case !(o.Lambda0 > 0):
		return fmt.Errorf("ternary: PTQTP lambda0 %g, want > 0", o.Lambda0)
	case !(o.LambdaMax >= o.Lambda0):
		return fmt.Errorf("ternary: PTQTP lambda max %g is below lambda0 %g", o.LambdaMax, o.Lambda0)
	case !(o.KappaMax >= 1):
		return fmt.Errorf("ternary: PTQTP kappa max %g, want >= 1", o.KappaMax)
	}
	return nil
}

// PlaneFormat returns the block format of the planes: TQ2_0 for groups of 256, Q2_0 for groups of 64.
func (o Options) PlaneFormat() Format {
	if o.GroupSize == FormatQ2_0.Block {
		return FormatQ2_0
	}
	return FormatTQ2_0
}

// The candidate trit tuples (t1, t2, t3) of the topology search in the pinned order of Fucina's combos_k1/2/3: the
// zero tuple first, then by support size, within a support size the later (finer) planes first, and within one
// support pattern lexicographic with −1 before +1. With strictly-less keep-first comparison, exact ties prefer
// sparser tuples, and from the symmetric sign(w) start single-level weights land in the last plane, so the planes
// diverge.
var (
	candidatesK1 = [][3]int8{{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}}
	candidatesK2 = [][3]int8{
		{0, 0, 0}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0},
		{-1, -1, 0}, {-1, 1, 0}, {1, -1, 0}, {1, 1, 0},
	}
	candidatesK3 = [][3]int8{
		{0, 0, 0},
		{0, 0, -1}, {0, 0, 1}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0},
		{0, -1, -1}, {0, -1, 1}, {0, 1, -1}, {0, 1, 1},
		{-1, 0, -1}, {-1, 0, 1}, {1, 0, -1}, {1, 0, 1},
		{-1, -1, 0}, {-1, 1, 0}, {1, -1, 0}, {1, 1, 0},
		{-1, -1, -1}, {-1, -1, 1}, {-1, 1, -1}, {-1, 1, 1},
		{1, -1, -1}, {1, -1, 1}, {1, 1, -1}, {1, 1, 1},
	}
)

func candidates(k int) [][3]int8 {
	switch k {
	case 1:
		return candidatesK1
	case 2:
		return candidatesK2
	}
	return candidatesK3
}

// GroupResult is the outcome of [SolveGroup].
type GroupResult struct {
	Alpha      [3]float32 // the scales as solved, signed; entries past K are 0
	Iterations int        // alternating steps taken
	Converged  bool       // ‖Δα‖₂ fell below Epsilon within MaxIterations
}

// SolveGroup solves one group w (any length; Fucina's solveGroupK) as w ≈ Σₖ αₖ·tₖ over K = opt.Planes trit
// vectors, writing the trits into t[0..K-1] (each len(w); t[K..] is not touched) and returning the scales. The
// trits returned are the argmin against exactly the returned α. It does not check opt (see Options.Validate).
//
// The algorithm, exactly as Fucina computes it (float64 arithmetic in its operation order, no fused multiply-add):
//  1. every plane starts at sign(w) (NaN and ±0 give 0, ±inf ±1); α starts at 1 in every plane, which only enters
//     the first convergence check;
//  2. scales: α = (SᵀS + λI)⁻¹Sᵀw with SᵀS counted in int64 (diagonal: nonzero trits per plane; off-diagonal:
//     Σ tᵢtⱼ) and Sᵀw accumulated in float64 over the finite weights as ±w. K = 1: α = b/(n + λ0). K = 2: closed
//     form with κ = ‖A‖²_F/det. K = 3: adjugate solve with κ = ‖A‖_F·‖adj A‖_F/det. λ starts at λ0 every iteration
//     and while κ > κmax and λ < λmax becomes min(10λ, λmax) (float64, from the float32 settings);
//  3. topology: every finite weight takes the candidate tuple c (pinned order, see above) minimising the float32
//     (w − v_c)², v_c = α₁c₁ (+ α₂c₂ (+ α₃c₃)) summed in float32, strictly-less keeping the first; a non-finite
//     weight gets the zero tuple;
//  4. stop when ‖α − α_prev‖₂ (float64) < ε, checked after the topology step, or after MaxIterations.
func SolveGroup(w []float32, t *[3][]int8, opt Options) GroupResult {
	var g group
	g.reset(w)
	var levels levelSet
	res := solve(&g, opt, &levels)
	g.trits(t, opt.Planes)
	return res
}

// solve is SolveGroup on a prepared group, with the caller's level scratch; the trits are left in g.ci.
func solve(g *group, opt Options, levels *levelSet) GroupResult {
	k := opt.Planes
	cands := candidates(k)
	// The sign(w) start: the same trit in every plane, which is the last candidate (all +1) or the first with all
	// −1 (index 1, 5 or 19), or the zero tuple.
	pos, neg := uint8(len(cands)-1), uint8(1)
	switch k {
	case 2:
		neg = 5
	case 3:
		neg = 19
	}
	for j, wj := range g.w {
		switch {
		case wj > 0:
			g.ci[j] = pos
		case wj < 0:
			g.ci[j] = neg
		default:
			g.ci[j] = 0
		}
	}
	var cf [3][27]float64 // the trits of each candidate as float64
	for i, c := range cands {
		for p := range k {
			cf[p][i] = float64(c[p])
		}
	}
	alpha := [3]float32{1}
	for p := 1; p < k; p++ {
		alpha[p] = 1
	}
	res := GroupResult{}
	for res.Iterations < opt.MaxIterations {
		res.Iterations++
		prev := alpha

		// Sᵀw in weight order (float64 sums are order-dependent); c·w is ±w or ±0, and b (never −0) is unchanged
		// by adding ±0, so this is Fucina's "if c ≠ 0 and w finite { b ±= w }" without branches (wf is 0 for a
		// non-finite weight). The Gram counts are exact integers, formed from how often each tuple occurs.
		var cnt [27]int64
		var b [3]float64
		for j, c := range g.ci {
			cnt[c]++
			wf := g.wf[j]
			b[0] += float64(cf[0][c] * wf)
			b[1] += float64(cf[1][c] * wf)
			b[2] += float64(cf[2][c] * wf)
		}
		var n [3]int64
		var s12, s13, s23 int64
		for i, c := range cands {
			m := cnt[i]
			for p := range k {
				n[p] += m * int64(c[p]*c[p])
			}
			s12 += m * int64(c[0]) * int64(c[1])
			s13 += m * int64(c[0]) * int64(c[2])
			s23 += m * int64(c[1]) * int64(c[2])
		}

		alpha, _ = ridge(k, n, s12, s13, s23, b, opt)

		levels.init(k, alpha)
		levels.search(g)

		var move2 float64
		for p := range k {
			d := float64(alpha[p]) - float64(prev[p])
			move2 += float64(d * d)
		}
		if math.Sqrt(move2) < float64(opt.Epsilon) {
			res.Converged = true
			break
		}
	}
	res.Alpha = alpha
	return res
}

// ridge is the scale step of SolveGroup: α = (SᵀS + λI)⁻¹Sᵀw from the integer Gram entries (n: the diagonal,
// s12, s13, s23: the off-diagonal) and b = Sᵀw, with λ escalated ×10 from λ0 while the condition estimate κ exceeds
// κmax and λ < λmax (K ≥ 2; K = 1 takes λ0). It returns α and the λ it used.
func ridge(k int, n [3]int64, s12, s13, s23 int64, b [3]float64, opt Options) (alpha [3]float32, lambda float64) {
	lambda0, lambdaMax, kappaMax := float64(opt.Lambda0), float64(opt.LambdaMax), float64(opt.KappaMax)
	lambda = lambda0
	switch k {
	case 1:
		alpha[0] = float32(b[0] / (float64(n[0]) + lambda))
	case 2:
		a12 := float64(s12)
		var a11, a22, det float64
		for {
			a11 = float64(n[0]) + lambda
			a22 = float64(n[1]) + lambda
			det = float64(a11*a22) - float64(a12*a12)
			frob2 := float64(float64(a11*a11)+float64(a22*a22)) + float64(float64(2*a12)*a12)
			if kappa := frob2 / det; kappa <= kappaMax || lambda >= lambdaMax {
				break
			}
			lambda = min(lambda*10, lambdaMax)
		}
		alpha[0] = float32((float64(b[0]*a22) - float64(b[1]*a12)) / det)
		alpha[1] = float32((float64(b[1]*a11) - float64(b[0]*a12)) / det)
	default:
		a12, a13, a23 := float64(s12), float64(s13), float64(s23)
		var adj11, adj12, adj13, adj22, adj23, adj33, det float64
		for {
			a11 := float64(n[0]) + lambda
			a22 := float64(n[1]) + lambda
			a33 := float64(n[2]) + lambda
			adj11 = float64(a22*a33) - float64(a23*a23)
			adj12 = -(float64(a12*a33) - float64(a23*a13))
			adj13 = float64(a12*a23) - float64(a22*a13)
			adj22 = float64(a11*a33) - float64(a13*a13)
			adj23 = -(float64(a11*a23) - float64(a12*a13))
			adj33 = float64(a11*a22) - float64(a12*a12)
			det = float64(float64(a11*adj11)+float64(a12*adj12)) + float64(a13*adj13)
			frobA := math.Sqrt(float64(float64(float64(a11*a11)+float64(a22*a22))+float64(a33*a33)) +
				float64(2*float64(float64(float64(a12*a12)+float64(a13*a13))+float64(a23*a23))))
			frobAdj := math.Sqrt(float64(float64(float64(adj11*adj11)+float64(adj22*adj22))+float64(adj33*adj33)) +
				float64(2*float64(float64(float64(adj12*adj12)+float64(adj13*adj13))+float64(adj23*adj23))))
			if kappa := float64(frobA*frobAdj) / det; kappa <= kappaMax || lambda >= lambdaMax {
				break
			}
			lambda = min(lambda*10, lambdaMax)
		}
		alpha[0] = float32((float64(float64(adj11*b[0])+float64(adj12*b[1])) + float64(adj13*b[2])) / det)
		alpha[1] = float32((float64(float64(adj12*b[0])+float64(adj22*b[1])) + float64(adj23*b[2])) / det)
		alpha[2] = float32((float64(float64(adj13*b[0])+float64(adj23*b[1])) + float64(adj33*b[2])) / det)
	}

	return alpha, lambda
}

// roundScale is |α| as an f16 block scale stores it (Fucina's roundScaleF16): the sign dropped (the candidate set
// is sign-symmetric, so the trits re-derive losslessly), clamped to 65504 (a NaN too, as Zig's @min returns the
// other operand), rounded to f16 to nearest even.
func roundScale(a float32) float32 {
	a = float32(math.Abs(float64(a)))
	if !(a <= maxF16) {
		a = maxF16
	}
	return quant.FP16ToFP32(quant.FP32ToFP16(a))
}

// levelSet holds the candidate values v_c of one α and answers the topology search.
type levelSet struct {
	k, n   int
	cands  [][3]int8
	vals   [27]float32 // v_c in pinned order
	finite bool        // every v_c is finite: the sorted search applies
	m      int         // distinct values
	sorted [27]float32 // the distinct values, ascending
	win    [27]uint8   // the least pinned index among the candidates worth sorted[i]

	// The shortcut of search: between the guard bands around the midpoints of neighbouring values, a weight's
	// nearest value is known without computing squares (see bands).
	bandLo, bandHi [26]float64 // band i surrounds the midpoint of sorted[i] and sorted[i+1]
	safe           [27]bool    // the region of sorted[i] may take the shortcut
	small          bool        // every |value| < 1e18: no square overflows
}

// init computes v_c = α₁c₁ (+ α₂c₂ (+ α₃c₃)) in float32 for each candidate, as Fucina's searchTrits does (so an
// infinite α gives NaN values where its trit is 0), and the distinct values in ascending order.
func (l *levelSet) init(k int, alpha [3]float32) {
	l.k, l.cands = k, candidates(k)
	l.n = len(l.cands)
	l.finite = true
	for i, c := range l.cands {
		v := float32(alpha[0] * float32(c[0]))
		if k >= 2 {
			v += float32(alpha[1] * float32(c[1]))
		}
		if k == 3 {
			v += float32(alpha[2] * float32(c[2]))
		}
		l.vals[i] = v
		l.finite = l.finite && isFinite(v)
	}
	if !l.finite {
		return
	}
	l.m = 0
	for i := range l.n { // insertion into the distinct values; equal values (±0 too) keep the first index
		v := l.vals[i]
		j := 0
		for j < l.m && l.sorted[j] < v {
			j++
		}
		if j < l.m && l.sorted[j] == v {
			continue // a later candidate worth the same: never preferred
		}
		copy(l.sorted[j+1:l.m+1], l.sorted[j:l.m])
		copy(l.win[j+1:l.m+1], l.win[j:l.m])
		l.sorted[j], l.win[j] = v, uint8(i)
		l.m++
	}
	l.bands()
}

// Bounds of the shortcut, see bands.
const (
	minGap    = 0x1p-58 // neighbouring values closer than this always take the exact path
	gapRatio  = 0x1p-20 // nor do values whose gaps to either side differ by more than 2^20
	bandWidth = 0x1p-18 // half-width of a guard band, relative to its gap
	smallMax  = 1e18    // values and weights must be below this in magnitude
)

// bands prepares the shortcut of search. For a finite weight w (|w| < 1e18) between the values u_i < u_{i+1}
// with gap γ = u_{i+1} − u_i ≥ 2^-58, outside the band [mid − γ·2^-18, mid + γ·2^-18] around their midpoint, the
// exact distances to the nearest value and to the next differ by a factor above 1 + 2^-16, and the distance to
// any value beyond a neighbour exceeds the distance to u_i by a factor above 1 + 2^-21 when the neighbouring gaps
// are within 2^20 of each other. Each float32 subtraction and square rounds by a factor within 1 ± 2^-24 (no
// square overflows below 1e18, and the competing squares are at least 2^-118, normal), so the nearest value's
// square is strictly the least: the answer is win[i], as the exhaustive search would find.
func (l *levelSet) bands() {
	l.small = true
	for i := range l.m {
		l.small = l.small && math.Abs(float64(l.sorted[i])) < smallMax
	}
	for i := range l.m - 1 {
		lo, hi := float64(l.sorted[i]), float64(l.sorted[i+1])
		mid, gap := (lo+hi)/2, hi-lo
		l.bandLo[i], l.bandHi[i] = mid-gap*bandWidth, mid+gap*bandWidth
	}
	for i := range l.m {
		ok := true
		var left, right float64
		if i > 0 {
			left = float64(l.sorted[i]) - float64(l.sorted[i-1])
			ok = ok && left >= minGap
		}
		if i < l.m-1 {
			right = float64(l.sorted[i+1]) - float64(l.sorted[i])
			ok = ok && right >= minGap
		}
		if i > 0 && i < l.m-1 {
			ok = ok && left >= right*gapRatio && right >= left*gapRatio
		}
		l.safe[i] = ok
	}
}

func sq(x float32) float32 { return x * x }

// nearestExhaustive is the topology search's specification for one finite weight: the first candidate, in pinned
// order, with the least float32 (w − v)², by strictly-less comparison.
func (l *levelSet) nearestExhaustive(w float32) int {
	best, bestErr := 0, sq(w-l.vals[0])
	for i := 1; i < l.n; i++ {
		if e := sq(w - l.vals[i]); e < bestErr {
			best, bestErr = i, e
		}
	}
	return best
}

// nearestFrom returns what nearestExhaustive returns, given p, the first position with sorted[p] >= w (l.m when
// none), when all values are finite: fl(w − v) is monotone in v and fl(d²) in |d|, so the squares fall (weakly)
// towards w from both sides; the least square is that of a neighbour of w, every value sharing it lies in one run
// around w, and the answer is the least pinned index over that run (equal values are merged in init).
func (l *levelSet) nearestFrom(w float32, p int) int {
	sl, sr := float32(math.Inf(1)), float32(math.Inf(1))
	if p > 0 {
		sl = sq(w - l.sorted[p-1])
	}
	if p < l.m {
		sr = sq(w - l.sorted[p])
	}
	best := sl
	if sr < best {
		best = sr
	}
	win := 255
	if p > 0 && sl == best {
		win = int(l.win[p-1])
		for i := p - 2; i >= 0 && sq(w-l.sorted[i]) == best; i-- {
			win = min(win, int(l.win[i]))
		}
	}
	if p < l.m && sr == best {
		win = min(win, int(l.win[p]))
		for i := p + 1; i < l.m && sq(w-l.sorted[i]) == best; i++ {
			win = min(win, int(l.win[i]))
		}
	}
	return win
}

// nearest is the topology search for one finite weight (a lower bound for p, then nearestFrom).
func (l *levelSet) nearest(w float32) int {
	if !l.finite {
		return l.nearestExhaustive(w)
	}
	p := 0
	for p < l.m && l.sorted[p] < w {
		p++
	}
	return l.nearestFrom(w, p)
}

// search sets g.ci to the nearest candidate of every weight of g (Fucina's searchTrits); the non-finite weights
// get the zero tuple. It walks the weights in ascending order (g.order), so the position of each among the levels
// and bands only moves forward; a weight between two guard bands takes the nearest value's candidate directly (see
// bands), any other the exact comparison of nearestFrom.
func (l *levelSet) search(g *group) {
	w, ci := g.w, g.ci
	for _, j := range g.nonFinite {
		ci[j] = 0
	}
	switch {
	case !l.finite:
		for _, j := range g.order {
			ci[j] = uint8(l.nearestExhaustive(w[j]))
		}
		return
	case l.m == 1: // every candidate has the same value, hence the same square
		for _, j := range g.order {
			ci[j] = l.win[0]
		}
		return
	}
	first, last := float64(l.sorted[0]), float64(l.sorted[l.m-1])
	p, b := 0, 0
	for o, j := range g.order {
		wj := g.sw[o]
		if x := float64(wj); l.small && x >= first && x <= last {
			for b < l.m-1 && x > l.bandHi[b] {
				b++
			}
			if (b == l.m-1 || x < l.bandLo[b]) && l.safe[b] {
				ci[j] = l.win[b]
				continue
			}
		}
		for p < l.m && l.sorted[p] < wj {
			p++
		}
		ci[j] = uint8(l.nearestFrom(wj, p))
	}
}

// group is one group's weights w, with wf the finite ones as float64 (0 for NaN and ±inf), the finite weights'
// positions in ascending order of value (any order among equal values: each weight's trits depend on its value
// alone), the positions of the non-finite weights, and ci, the pinned index of each weight's trit tuple.
type group struct {
	w         []float32
	wf        []float64
	keys      []uint64
	order     []int32
	sw        []float32 // w[order[i]]
	nonFinite []int32
	ci        []uint8
}

// reset prepares g for the weights w.
func (g *group) reset(w []float32) {
	g.w = w
	g.wf, g.ci = slices.Grow(g.wf[:0], len(w))[:len(w)], slices.Grow(g.ci[:0], len(w))[:len(w)]
	g.keys, g.order, g.sw, g.nonFinite = g.keys[:0], g.order[:0], g.sw[:0], g.nonFinite[:0]
	for j, v := range w {
		if !isFinite(v) {
			g.wf[j] = 0
			g.nonFinite = append(g.nonFinite, int32(j))
			continue
		}
		g.wf[j] = float64(v)
		b := math.Float32bits(v) // to an unsigned key in the floats' order (−0 before +0: either is fine)
		if b>>31 != 0 {
			b = ^b
		} else {
			b |= 1 << 31
		}
		g.keys = append(g.keys, uint64(b)<<32|uint64(j))
	}
	slices.Sort(g.keys)
	for _, k := range g.keys {
		g.order = append(g.order, int32(uint32(k)))
		g.sw = append(g.sw, w[uint32(k)])
	}
}

// trits writes the trits of g.ci into t[0..k-1].
func (g *group) trits(t *[3][]int8, k int) {
	cands := candidates(k)
	for j, c := range g.ci {
		for p := range k {
			t[p][j] = cands[c][p]
		}
	}
}

// MatrixStats are the diagnostics of one quantized matrix (Fucina's MatrixStats), measured on the reconstruction
// inference uses (the f16-rounded scales and the trits chosen for them).
type MatrixStats struct {
	RelFrobErr        float64    // ‖W − Ŵ‖_F/‖W‖_F over the finite weights (0 when ‖W‖ is 0)
	ZeroFrac          [3]float64 // fraction of zero trits per plane, over all weights; 0 past K
	MeanIterations    float64    // alternating steps per group
	UnconvergedGroups int        // groups that reached MaxIterations without meeting Epsilon
	Groups            int        // groups in all
}

// rowStat holds one row's share of MatrixStats, summed over its groups in order.
type rowStat struct {
	err, w2     float64
	zeros       [3]int64
	iters       int64
	unconverged int32
}

// PlaneSet holds the K trit-planes of one weight matrix of Rows rows (ne[1]) of Cols weights (ne[0]) as PTQTP
// writes them: plane p is a complete tensor of Format.Type (TQ2_0 for groups of 256, Q2_0 for groups of 64) in
// Planes[p], rows one after another, each group a block whose d is f16(|α_p|) and whose codes are trit+1. The
// matrix it stands for is the sum of the dequantized planes.
type PlaneSet struct {
	Format     Format
	Rows, Cols int
	Planes     [][]byte

	opt  Options
	stat []rowStat
	done []bool
}

// NewPlaneSet allocates the planes of a rows×cols matrix (K·rows·cols/G blocks). It checks opt and that cols is a
// positive multiple of the group size and rows positive.
func NewPlaneSet(rows, cols int, opt Options) (*PlaneSet, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	f := opt.PlaneFormat()
	if rows < 1 || cols < 1 || cols%f.Block != 0 {
		return nil, fmt.Errorf("ternary: PTQTP: a %d×%d matrix is not rows of whole %d-weight groups", rows, cols, f.Block)
	}
	s := &PlaneSet{Format: f, Rows: rows, Cols: cols, opt: opt, stat: make([]rowStat, rows), done: make([]bool, rows)}
	for range opt.Planes {
		s.Planes = append(s.Planes, make([]byte, rows*f.RowBytes(cols)))
	}
	return s, nil
}

// QuantizeRows solves and packs rows first, first+1, … of the matrix from w, which holds len(w)/Cols whole rows,
// sharing them between the pool's workers (a nil pool runs on the caller). Every row is a pure function of its
// weights, so the planes do not depend on the pool's size, nor on how the rows are split between calls.
func (s *PlaneSet) QuantizeRows(first int, w []float32, pool *parallel.Pool) error {
	if len(w)%s.Cols != 0 || first < 0 || first+len(w)/s.Cols > s.Rows {
		return fmt.Errorf("ternary: PTQTP: %d weights at row %d do not fit %d rows of %d", len(w), first, s.Rows, s.Cols)
	}
	n := len(w) / s.Cols
	pool.For(n, func(lo, hi int) {
		var buf [3][256]int8
		t := [3][]int8{buf[0][:s.opt.GroupSize], buf[1][:s.opt.GroupSize], buf[2][:s.opt.GroupSize]}
		sc := new(scratch)
		for r := lo; r < hi; r++ {
			s.quantizeRow(first+r, w[r*s.Cols:(r+1)*s.Cols], &t, sc)
		}
	})
	return nil
}

// scratch is one worker's reusable group state.
type scratch struct {
	group  group
	levels levelSet
}

// quantizeRow solves and packs row r (Fucina's packGroup for each group): solve, take f16(|α|), search once more
// against the rounded scales, pack, and measure the reconstruction.
func (s *PlaneSet) quantizeRow(r int, w []float32, t *[3][]int8, sc *scratch) {
	g, k, f := s.opt.GroupSize, s.opt.Planes, s.Format
	var st rowStat
	for gi := range s.Cols / g {
		seg := w[gi*g : (gi+1)*g]
		sc.group.reset(seg)
		res := solve(&sc.group, s.opt, &sc.levels)
		var alpha [3]float32
		for p := range k {
			alpha[p] = roundScale(res.Alpha[p])
		}
		sc.levels.init(k, alpha)
		sc.levels.search(&sc.group)
		sc.group.trits(t, k)
		off := r*f.RowBytes(s.Cols) + gi*f.BlockBytes
		for p := range k {
			d := quant.FP32ToFP16(alpha[p])
			if f.Type == FormatQ2_0.Type {
				packQ2_0(s.Planes[p][off:], t[p], d)
			} else {
				packTQ2_0(s.Planes[p][off:], (*[256]int8)(t[p]), d)
			}
		}
		for j, wj := range seg {
			for p := range k {
				if t[p][j] == 0 {
					st.zeros[p]++
				}
			}
			if !isFinite(wj) {
				continue
			}
			var rec float32
			for p := range k {
				rec += float32(alpha[p] * float32(t[p][j]))
			}
			e := float64(wj) - float64(rec)
			st.err += float64(e * e)
			st.w2 += float64(float64(wj) * float64(wj))
		}
		st.iters += int64(res.Iterations)
		if !res.Converged {
			st.unconverged++
		}
	}
	s.stat[r] = st
	s.done[r] = true
}

// Stats reduces the rows' diagnostics in row order (so they do not depend on the pool either). It reports an
// error until every row was quantized.
func (s *PlaneSet) Stats() (MatrixStats, error) {
	var err, w2 float64
	var zeros [3]int64
	var iters int64
	var st MatrixStats
	for r, rs := range s.stat {
		if !s.done[r] {
			return MatrixStats{}, fmt.Errorf("ternary: PTQTP: row %d of %d not quantized", r, s.Rows)
		}
		err += rs.err
		w2 += rs.w2
		for p := range 3 {
			zeros[p] += rs.zeros[p]
		}
		iters += rs.iters
		st.UnconvergedGroups += int(rs.unconverged)
	}
	st.Groups = s.Rows * (s.Cols / s.opt.GroupSize)
	elems := float64(s.Rows) * float64(s.Cols)
	if w2 > 0 {
		st.RelFrobErr = math.Sqrt(err / w2)
	}
	for p := range s.opt.Planes {
		st.ZeroFrac[p] = float64(zeros[p]) / elems
	}
	st.MeanIterations = float64(iters) / float64(st.Groups)
	return st, nil
}

// Reconstruct writes into dst (Rows·Cols values, rows in order) the matrix the planes stand for: each plane
// dequantized by quant's row dequantizer (code−1)·d and added in plane order, ((P0 + P1) + P2) in float32 — the
// order in which a PTQTP layer sums its plane products.
func (s *PlaneSet) Reconstruct(dst []float32) error {
	if len(dst) != s.Rows*s.Cols {
		return fmt.Errorf("ternary: PTQTP: reconstruction of %d values into %d", s.Rows*s.Cols, len(dst))
	}
	tmp := make([]float32, s.Cols)
	rb := s.Format.RowBytes(s.Cols)
	for r := range s.Rows {
		row := dst[r*s.Cols : (r+1)*s.Cols]
		for p, plane := range s.Planes {
			dequantize(s.Format.Type, plane[r*rb:(r+1)*rb], tmp)
			for j, v := range tmp {
				if p == 0 {
					row[j] = v
				} else {
					row[j] += v
				}
			}
		}
	}
	return nil
}

// QuantizeMatrix solves the whole rows×cols matrix w (rows in order) into a new PlaneSet and returns it with its
// stats: Fucina's quantizeMatrix, with groups of opt.GroupSize.
func QuantizeMatrix(w []float32, rows, cols int, opt Options, pool *parallel.Pool) (*PlaneSet, MatrixStats, error) {
	s, err := NewPlaneSet(rows, cols, opt)
	if err != nil {
		return nil, MatrixStats{}, err
	}
	if len(w) != rows*cols {
		return nil, MatrixStats{}, fmt.Errorf("ternary: PTQTP: %d weights for a %d×%d matrix", len(w), rows, cols)
	}
	if err := s.QuantizeRows(0, w, pool); err != nil {
		return nil, MatrixStats{}, err
	}
	st, err := s.Stats()
	return s, st, err
}
