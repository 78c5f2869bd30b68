package fmath

import (
	"math"
	"math/big"
)

// Constants of glibc's pow (sysdeps/ieee754/dbl-64/e_pow.c and its data
// files, from ARM's optimized-routines): log in double-double from a
// 128-entry table and a degree-7 polynomial, exp from a 128-entry table and a
// degree-5 polynomial.
const (
	powLogTableBits = 7
	powOff          = 0x3fe6955500000000 // 0x1.69555p-1: z is in [powOff, 2*powOff)
	powLn2Hi        = 0x1.62e42fefa38p-01
	powLn2Lo        = 0x1.ef35793c7673p-45
	powA0           = -0x1p-01
	powA1           = -0x1.555555555556p-01
	powA2           = 0x1.0000000000006p-01
	powA3           = 0x1.999999959554ep-01
	powA4           = -0x1.555555529a47ap-01
	powA5           = -0x1.2495b9b4845e9p+00
	powA6           = 0x1.0002b8b263fc3p+00

	expTableBits7 = 7
	expInvLn2N7   = 0x1.71547652b82fep+07
	expNegLn2Hi7  = -0x1.62e42fefap-08
	expNegLn2Lo7  = -0x1.cf79abc9e3b3ap-47
	expShift7     = 0x1.8p+52
	powExpC2      = 0x1.ffffffffffdbdp-02
	powExpC3      = 0x1.555555555543cp-03
	powExpC4      = 0x1.55555cf172b91p-05
	powExpC5      = 0x1.1111167a4d017p-07
	powSignBias   = 0x800 << expTableBits7
)

// powLogTab is glibc's __pow_log_data.tab, derived here from the rule its
// data file states rather than copied: subinterval i of [powOff, 2*powOff)
// (the 7 mantissa bits below powOff's top bits) has centre c; invc = 1/c
// rounded to j/128 when c < 1 or to j/256 otherwise (so z*invc - 1 is exact);
// logc = log(1/invc) rounded to a multiple of 2^-43 (so k*ln2hi + logc is
// exact) and logctail = the rest, rounded to double. log is evaluated with
// 400-bit arithmetic. TestPowMatchesLibm checks the result.
var powLogTab = func() (t [1 << powLogTableBits]struct{ invc, logc, logctail float64 }) {
	const prec = 400
	for i := range t {
		lo := math.Float64frombits(powOff + uint64(i)<<(52-powLogTableBits))
		hi := math.Float64frombits(powOff + uint64(i+1)<<(52-powLogTableBits))
		c := (lo + hi) / 2
		if c < 1 {
			t[i].invc = math.Round(128/c) / 128
		} else {
			t[i].invc = math.Round(256/c) / 256
		}
		lc := bigLog(new(big.Float).SetPrec(prec).SetFloat64(t[i].invc), prec)
		lc.Neg(lc) // log(c) = -log(invc)
		scaled := new(big.Float).SetPrec(prec).SetMantExp(lc, 43)
		scaled.Add(scaled, new(big.Float).SetPrec(prec).SetFloat64(0.5))
		n, acc := scaled.Int(nil) // truncates towards zero
		if scaled.Sign() < 0 && acc != big.Exact {
			n.Sub(n, big.NewInt(1)) // floor
		}
		logc := new(big.Float).SetPrec(prec).SetMantExp(new(big.Float).SetPrec(prec).SetInt(n), -43)
		t[i].logc, _ = logc.Float64()
		t[i].logctail, _ = new(big.Float).SetPrec(prec).Sub(lc, logc).Float64()
	}
	return t
}()

// expTab7 is glibc's __exp_data.tab (EXP_TABLE_BITS = 7): for k in [0, 128),
// tab[2k] = the relative error of H = 2^(k/128) rounded to double, and
// tab[2k+1] = bits(H) - k<<45. Derived with 300-bit arithmetic.
var expTab7 = func() (t [2 << expTableBits7]uint64) {
	const prec = 300
	root := new(big.Float).SetPrec(prec).SetInt64(2)
	for range expTableBits7 {
		root.Sqrt(root)
	}
	v := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := range 1 << expTableBits7 {
		h, _ := v.Float64()
		hb := new(big.Float).SetPrec(prec).SetFloat64(h)
		tail := new(big.Float).SetPrec(prec).Sub(v, hb)
		tail.Quo(tail, hb)
		tf, _ := tail.Float64()
		t[2*k] = math.Float64bits(tf)
		t[2*k+1] = math.Float64bits(h) - uint64(k)<<(52-expTableBits7)
		v.Mul(v, root)
	}
	return t
}()

// bigLog returns log(x) for x in (0.5, 2) at prec bits, from the series
// log x = 2 atanh(u) = 2 (u + u^3/3 + u^5/5 + ...), u = (x-1)/(x+1).
func bigLog(x *big.Float, prec uint) *big.Float {
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	u := new(big.Float).SetPrec(prec).Sub(x, one)
	u.Quo(u, new(big.Float).SetPrec(prec).Add(x, one))
	u2 := new(big.Float).SetPrec(prec).Mul(u, u)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(u)
	eps := new(big.Float).SetPrec(prec).SetMantExp(one, -int(prec)-8)
	for k := int64(0); ; k++ {
		t := new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(2*k+1))
		sum.Add(sum, t)
		if t.Abs(t).Cmp(eps) < 0 {
			break
		}
		term.Mul(term, u2)
	}
	return sum.Mul(sum, new(big.Float).SetPrec(prec).SetInt64(2))
}

// Pow returns x**y exactly as the x86-64 FMA build of glibc 2.36's pow does
// (the variant its ifunc selects on AVX2+FMA CPUs; llama.cpp's DRY sampler
// calls it as std::pow(float, int), i.e. pow(double, double)). It is not
// always correctly rounded (glibc's bound is 0.52 ULP; about one result in a
// thousand on the DRY sampler's domain differs from the correctly rounded
// power), which is why Go's math.Pow or a correctly rounded power would differ
// in the last bit. The
// algorithm is ARM optimized-routines': log(x) as a double-double, y*log(x)
// with an exact product, exp of the double-double; the contractions follow
// the compiler's as read from the disassembly of libm.so.6. Round-to-nearest
// is assumed.
//
// Special cases follow C99 Annex F as glibc implements them (see [Powf]);
// overflow gives ±Inf, underflow ±0 or a correctly placed subnormal.
func Pow(x, y float64) float64 {
	var signBias uint64
	ix, iy := math.Float64bits(x), math.Float64bits(y)
	topx, topy := uint32(ix>>52), uint32(iy>>52)
	if topx-0x001 >= 0x7ff-0x001 || (topy&0x7ff)-0x3be >= 0x43e-0x3be {
		// x is subnormal, zero, infinite, NaN or negative, or |y| is tiny,
		// huge or NaN.
		if zeroInfNaN(iy) {
			switch {
			case 2*iy == 0:
				if isSignaling(ix) {
					return x + y
				}
				return 1
			case ix == math.Float64bits(1):
				if isSignaling(iy) {
					return x + y
				}
				return 1
			case 2*ix > 2*math.Float64bits(math.Inf(1)) || 2*iy > 2*math.Float64bits(math.Inf(1)):
				return x + y
			case 2*ix == 2*math.Float64bits(1):
				return 1
			case (2*ix < 2*math.Float64bits(1)) == (iy>>63 == 0):
				return 0
			}
			return y * y
		}
		if zeroInfNaN(ix) {
			x2 := x * x
			neg := false
			if ix>>63 != 0 && checkInt(iy) == 1 {
				x2, neg = -x2, true
			}
			if 2*ix == 0 && iy>>63 != 0 { // __math_divzero
				if neg {
					return math.Inf(-1)
				}
				return math.Inf(1)
			}
			if iy>>63 != 0 {
				return 1 / x2
			}
			return x2
		}
		// x and y are non-zero finite.
		if ix>>63 != 0 {
			switch checkInt(iy) {
			case 0:
				return invalid(ix)
			case 1:
				signBias = powSignBias
			}
			ix &= 0x7fffffffffffffff
			topx &= 0x7ff
		}
		if (topy&0x7ff)-0x3be >= 0x43e-0x3be {
			// sign_bias is 0 here: y is not an odd integer.
			if ix == math.Float64bits(1) {
				return 1
			}
			if topy&0x7ff < 0x3be { // |y| < 2^-65: x^y ~= 1 + y*log(x)
				if ix > math.Float64bits(1) {
					return 1 + y
				}
				return 1 - y
			}
			if (ix > math.Float64bits(1)) == (topy < 0x800) {
				return math.Inf(1)
			}
			return 0
		}
		if topx == 0 { // subnormal x: normalise so the exponent goes negative
			ix = math.Float64bits(x*0x1p52) & 0x7fffffffffffffff
			ix -= 52 << 52
		}
	}
	hi, lo := powLog(ix)
	ehi := y * hi
	elo := fma64(y, lo, fma64(hi, y, -ehi))
	return powExp(ehi, elo, signBias)
}

// powLog is pow's log_inline: log of the positive normal double with bits ix
// as hi + lo.
func powLog(ix uint64) (hi, lo float64) {
	tmp := ix - powOff
	i := (tmp >> (52 - powLogTableBits)) % (1 << powLogTableBits)
	k := int64(tmp) >> 52
	iz := ix - tmp&(0xfff<<52)
	z := math.Float64frombits(iz)
	kd := float64(k)
	e := &powLogTab[i]
	t1 := fma64(kd, powLn2Hi, e.logc)
	lo1 := fma64(kd, powLn2Lo, e.logctail)
	r := fma64(z, e.invc, -1) // exact
	ar := r * powA0
	q12 := fma64(r, powA2, powA1)
	q34 := fma64(r, powA4, powA3)
	t2 := r + t1
	ar2 := r * ar
	lo2 := t1 - t2 + r
	ar3 := r * ar2
	lo3 := fma64(ar, r, -ar2)
	q56 := fma64(r, powA6, powA5)
	hi = t2 + ar2
	q := fma64(q56, ar2, q34)
	lo4 := t2 - hi + ar2
	q = fma64(ar2, q, q12)
	l := lo1 + lo2
	l += lo3
	l += lo4
	l = fma64(ar3, q, l) // + p = ar3 * q
	y := hi + l
	tail := hi - y + l
	return y, tail
}

// powExp is pow's exp_inline: exp(x + xtail) with the sign set by signBias.
func powExp(x, xtail float64, signBias uint64) float64 {
	abstop := uint32(math.Float64bits(x)>>52) & 0x7ff
	if abstop-0x3c9 >= 0x408-0x3c9 { // |x| < 2^-54 or |x| >= 512
		if int32(abstop-0x3c9) < 0 { // tiny: avoid a spurious underflow
			one := 1.0 + x
			if signBias != 0 {
				return -one
			}
			return one
		}
		if abstop >= 0x409 { // |x| >= 1024: inf and nan are handled already
			if math.Float64bits(x)>>63 != 0 {
				return signed(0, signBias)
			}
			return signed(math.Inf(1), signBias)
		}
		abstop = 0 // large |x|: special-cased below
	}
	kd := fma64(x, expInvLn2N7, expShift7)
	ki := math.Float64bits(kd)
	kd -= expShift7
	r := fma64(kd, expNegLn2Hi7, x)
	r = fma64(kd, expNegLn2Lo7, r)
	r = xtail + r
	idx := 2 * (ki % (1 << expTableBits7))
	top := (ki + signBias) << (52 - expTableBits7)
	tail := math.Float64frombits(expTab7[idx])
	sbits := expTab7[idx+1] + top
	p23 := fma64(r, powExpC3, powExpC2)
	tr := tail + r
	r2 := r * r
	p45 := fma64(r, powExpC5, powExpC4)
	p23 = fma64(p23, r2, tr)
	r4 := r2 * r2
	tmp := fma64(p45, r4, p23)
	if abstop == 0 {
		return powExpSpecial(tmp, sbits, ki)
	}
	scale := math.Float64frombits(sbits)
	return fma64(tmp, scale, scale)
}

// powExpSpecial is exp_inline's specialcase: scale*(1+tmp) when the scale's
// exponent over- or underflows.
func powExpSpecial(tmp float64, sbits, ki uint64) float64 {
	if ki&0x80000000 == 0 {
		// k > 0: the exponent of scale might have overflowed by <= 460.
		sbits -= 1009 << 52
		scale := math.Float64frombits(sbits)
		return 0x1p1009 * fma64(scale, tmp, scale)
	}
	// k < 0: care in the subnormal range.
	sbits += 1022 << 52
	scale := math.Float64frombits(sbits)
	st := float64(scale * tmp)
	y := scale + st
	if math.Abs(y) < 1 {
		// Round y to the right precision before scaling into the subnormal
		// range, avoiding double rounding.
		one := 1.0
		if y < 0 {
			one = -1.0
		}
		lo := scale - y + st
		hi := one + y
		lo = one - hi + y + lo
		y = hi + lo - one
		if y == 0 {
			y = math.Float64frombits(sbits & 0x8000000000000000)
		}
	}
	return 0x1p-1022 * y
}

// zeroInfNaN reports whether the double with bits i is ±0, ±Inf or NaN.
func zeroInfNaN(i uint64) bool { return 2*i-1 >= 2*math.Float64bits(math.Inf(1))-1 }

// checkInt returns 0 if the non-zero finite double with bits iy is not an
// integer, 1 if it is odd, 2 if it is even.
func checkInt(iy uint64) int {
	e := int(iy >> 52 & 0x7ff)
	switch {
	case e < 0x3ff:
		return 0
	case e > 0x3ff+52:
		return 2
	case iy&(1<<(0x3ff+52-e)-1) != 0:
		return 0
	case iy&(1<<(0x3ff+52-e)) != 0:
		return 1
	}
	return 2
}

// isSignaling reports whether the double with bits i is a signaling NaN.
func isSignaling(i uint64) bool {
	return 2*(i^0x0008000000000000) > 2*0x7ff8000000000000
}

// invalid is glibc's __math_invalid(x) = (x - x) / (x - x) on x86.
func invalid(ix uint64) float64 {
	if ix&0x7fffffffffffffff > 0x7ff0000000000000 {
		return math.Float64frombits(ix | 0x0008000000000000)
	}
	return math.Float64frombits(0xfff8000000000000)
}

// signed returns v negated when signBias is set.
func signed(v float64, signBias uint64) float64 {
	if signBias != 0 {
		return -v
	}
	return v
}
