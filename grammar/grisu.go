package grammar

import (
	"math"
	"math/big"
	"math/bits"
	"sync"
)

// This file is the Grisu2 algorithm (Loitsch, "Printing Floating-Point
// Numbers Quickly and Accurately with Integers", 2010) as nlohmann's JSON
// library runs it to print doubles (its to_chars): the digits it gives
// always read back as the same double, but are not always the shortest or
// the closest such digits, so printing with strconv differs in about one
// value in three hundred.

type diyfp struct {
	f uint64
	e int
}

func (x diyfp) sub(y diyfp) diyfp { return diyfp{x.f - y.f, x.e} }

// mul returns the upper 64 bits of x.f * y.f, rounded (ties up).
func (x diyfp) mul(y diyfp) diyfp {
	uLo, uHi := x.f&0xFFFFFFFF, x.f>>32
	vLo, vHi := y.f&0xFFFFFFFF, y.f>>32
	p0, p1, p2, p3 := uLo*vLo, uLo*vHi, uHi*vLo, uHi*vHi
	q := p0>>32 + p1&0xFFFFFFFF + p2&0xFFFFFFFF
	q += 1 << 31
	return diyfp{p3 + p2>>32 + p1>>32 + q>>32, x.e + y.e + 64}
}

func (x diyfp) normalize() diyfp {
	n := bits.LeadingZeros64(x.f)
	return diyfp{x.f << n, x.e - n}
}

// boundaries returns v normalized and the lower and upper boundaries of
// its rounding interval, with the upper one's exponent.
func boundaries(v float64) (w, minus, plus diyfp) {
	const precision, bias = 53, 1075
	const hidden = uint64(1) << 52
	b := math.Float64bits(v)
	e, f := b>>52, b&(hidden-1)
	x := diyfp{f + hidden, int(e) - bias}
	if e == 0 {
		x = diyfp{f, 1 - bias}
	}
	mPlus := diyfp{2*x.f + 1, x.e - 1}
	mMinus := diyfp{2*x.f - 1, x.e - 1}
	if f == 0 && e > 1 {
		mMinus = diyfp{4*x.f - 1, x.e - 2}
	}
	plus = mPlus.normalize()
	minus = diyfp{mMinus.f << (mMinus.e - plus.e), plus.e}
	return x.normalize(), minus, plus
}

const (
	grisuAlpha       = -60
	cachedPowMinExp  = -300
	cachedPowDecStep = 8
	nCachedPowers    = 79
)

type cachedPower struct {
	f    uint64
	e, k int
}

// cachedPowers are 10^k for k = -300, -292, ..., 324 as 64-bit
// significands rounded to nearest, with their binary exponents.
var cachedPowers = sync.OnceValue(func() [nCachedPowers]cachedPower {
	var out [nCachedPowers]cachedPower
	for i := range out {
		k := cachedPowMinExp + cachedPowDecStep*i
		r := new(big.Rat)
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(k, -k))), nil)
		if k >= 0 {
			r.SetInt(p)
		} else {
			r.SetFrac(big.NewInt(1), p)
		}
		// find e with 2^63 <= 10^k / 2^e < 2^64
		e := 0
		lo, hi := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 63)), new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 64))
		scaled := func(e int) *big.Rat {
			s := new(big.Rat).Set(r)
			two := new(big.Int).Lsh(big.NewInt(1), uint(max(e, -e)))
			if e >= 0 {
				return s.Quo(s, new(big.Rat).SetInt(two))
			}
			return s.Mul(s, new(big.Rat).SetInt(two))
		}
		e = int(float64(k)*3.321928094887362) - 63
		for scaled(e).Cmp(lo) < 0 {
			e--
		}
		for scaled(e).Cmp(hi) >= 0 {
			e++
		}
		s := scaled(e)
		// round to nearest (ties up)
		num := new(big.Int).Mul(s.Num(), big.NewInt(2))
		num.Add(num, s.Denom())
		num.Quo(num, new(big.Int).Mul(s.Denom(), big.NewInt(2)))
		if num.BitLen() > 64 {
			num.Rsh(num, 1)
			e++
		}
		out[i] = cachedPower{num.Uint64(), e, k}
	}
	return out
})

func cachedPowerFor(e int) cachedPower {
	f := grisuAlpha - e - 1
	k := f * 78913 / (1 << 18)
	if f > 0 {
		k++
	}
	index := (-cachedPowMinExp + k + (cachedPowDecStep - 1)) / cachedPowDecStep
	return cachedPowers()[index]
}

func largestPow10(n uint32) (int, uint32) {
	p := uint32(1)
	k := 1
	for k < 10 && n >= p*10 {
		p *= 10
		k++
	}
	return k, p
}

func grisu2Round(buf []byte, dist, delta, rest, tenK uint64) {
	for rest < dist && delta-rest >= tenK && (rest+tenK < dist || dist-rest > rest+tenK-dist) {
		buf[len(buf)-1]--
		rest += tenK
	}
}

// grisu2 returns the digits and decimal exponent of v > 0 (v = digits *
// 10^exp).
func grisu2(v float64) ([]byte, int) {
	w, mMinus, mPlus := boundaries(v)
	c := cachedPowerFor(mPlus.e)
	cMinusK := diyfp{c.f, c.e}
	w = w.mul(cMinusK)
	wMinus := mMinus.mul(cMinusK)
	wPlus := mPlus.mul(cMinusK)
	lo := diyfp{wMinus.f + 1, wMinus.e}
	hi := diyfp{wPlus.f - 1, wPlus.e}
	exp := -c.k

	delta := hi.sub(lo).f
	dist := hi.sub(w).f
	oneE := uint(-hi.e)
	oneF := uint64(1) << oneE
	p1 := uint32(hi.f >> oneE)
	p2 := hi.f & (oneF - 1)
	buf := make([]byte, 0, 20)
	k, pow10 := largestPow10(p1)
	for n := k; n > 0; {
		d, r := p1/pow10, p1%pow10
		buf = append(buf, byte('0'+d))
		p1 = r
		n--
		rest := uint64(p1)<<oneE + p2
		if rest <= delta {
			exp += n
			grisu2Round(buf, dist, delta, rest, uint64(pow10)<<oneE)
			return buf, exp
		}
		pow10 /= 10
	}
	m := 0
	for {
		p2 *= 10
		d, r := p2>>oneE, p2&(oneF-1)
		buf = append(buf, byte('0'+d))
		p2 = r
		m++
		delta *= 10
		dist *= 10
		if p2 <= delta {
			break
		}
	}
	exp -= m
	grisu2Round(buf, dist, delta, p2, oneF)
	return buf, exp
}
