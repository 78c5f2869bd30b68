package stdcpp

import "math"

// MT19937 parameters (std::mt19937 = mersenne_twister_engine<uint_fast32_t,
// 32, 624, 397, 31, 0x9908b0df, 11, 0xffffffff, 7, 0x9d2c5680, 15,
// 0xefc60000, 18, 1812433253>).
const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
	mtInitMul   = 1812433253

	// DefaultSeed is std::mersenne_twister_engine::default_seed (5489), the
	// state of a default-constructed std::mt19937.
	DefaultSeed = 5489
)

// MT19937 is std::mt19937: the 32-bit Mersenne Twister with libstdc++'s
// seeding (std::mersenne_twister_engine::seed(result_type)). The zero value
// is not seeded; use [NewMT19937].
type MT19937 struct {
	x [mtN]uint32
	p int
}

// NewMT19937 returns the engine std::mt19937(seed) constructs.
func NewMT19937(seed uint32) *MT19937 {
	g := &MT19937{}
	g.Seed(seed)
	return g
}

// Seed re-initialises the engine as std::mt19937::seed(seed) does.
func (g *MT19937) Seed(seed uint32) {
	g.x[0] = seed
	for i := 1; i < mtN; i++ {
		prev := g.x[i-1]
		g.x[i] = mtInitMul*(prev^(prev>>30)) + uint32(i)
	}
	g.p = mtN
}

// Uint32 returns the next output, as std::mt19937::operator() does.
func (g *MT19937) Uint32() uint32 {
	if g.p >= mtN {
		g.genRand()
	}
	z := g.x[g.p]
	g.p++
	z ^= z >> 11
	z ^= (z << 7) & 0x9d2c5680
	z ^= (z << 15) & 0xefc60000
	z ^= z >> 18
	return z
}

// genRand is mersenne_twister_engine::_M_gen_rand: the next 624 state words.
func (g *MT19937) genRand() {
	twist := func(a, b uint32) uint32 {
		y := a&mtUpperMask | b&mtLowerMask
		v := y >> 1
		if y&1 != 0 {
			v ^= mtMatrixA
		}
		return v
	}
	for k := 0; k < mtN-mtM; k++ {
		g.x[k] = g.x[k+mtM] ^ twist(g.x[k], g.x[k+1])
	}
	for k := mtN - mtM; k < mtN-1; k++ {
		g.x[k] = g.x[k+(mtM-mtN)] ^ twist(g.x[k], g.x[k+1])
	}
	g.x[mtN-1] = g.x[mtM-1] ^ twist(g.x[mtN-1], g.x[0])
	g.p = 0
}

// GenerateCanonical32 is std::generate_canonical<float, 24>(g) for a 32-bit
// engine: one draw u, float(u) / 2^32 (u is first rounded to float, so the
// quotient can reach 1), and a result of 1 replaced by the largest float
// below 1 (libstdc++'s nextafter(1, 0)). The result is in [0, 1).
func GenerateCanonical32(g *MT19937) float32 {
	sum := float32(g.Uint32()) // _RealType(u - min) * 1, rounded to nearest
	ret := sum / 0x1p32
	if ret >= 1 {
		ret = math.Nextafter32(1, 0)
	}
	return ret
}

// GenerateCanonical64 is std::generate_canonical<double, 53>(g) for a 32-bit
// engine: two draws u1, u2, (u1 + u2*2^32) / 2^64 with the sum rounded to
// double, and a result of 1 replaced by the largest double below 1. The
// result is in [0, 1).
func GenerateCanonical64(g *MT19937) float64 {
	u1 := float64(g.Uint32())
	u2 := float64(g.Uint32())
	sum := float64(0) + u1
	sum = sum + float64(u2*0x1p32) // the product is exact; the sum rounds once
	ret := sum / 0x1p64
	if ret >= 1 {
		ret = math.Nextafter(1, 0)
	}
	return ret
}

// UniformReal32 is std::uniform_real_distribution<float>(a, b)(g):
// GenerateCanonical32(g) * (b - a) + a, each operation rounded to float.
func UniformReal32(g *MT19937, a, b float32) float32 {
	return float32(GenerateCanonical32(g)*(b-a)) + a
}

// UniformReal64 is std::uniform_real_distribution<double>(a, b)(g):
// GenerateCanonical64(g) * (b - a) + a, each operation rounded to double.
func UniformReal64(g *MT19937, a, b float64) float64 {
	return float64(GenerateCanonical64(g)*(b-a)) + a
}
