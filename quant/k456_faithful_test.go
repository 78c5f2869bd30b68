package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/fmath"
)

// Source-faithful readings of the kernels that the compiled reference does
// not compute, kept to show the oracle tells them apart (and how often):
// each is the kernel with one detail read from the C source instead of the
// disassembly.

// k456NaiveQ5Summs is ggml_vec_dot_q5_K_q8_K with `summs += dmin * isum` rounded
// twice, as the source reads; GCC emitted vfmadd231ss.
func k456NaiveQ5Summs(w, a []byte, nb int) float32 {
	var acc [8]float32
	var summs float32
	var sc, mn [8]int32
	var bs32 [8]int32
	for b := range nb {
		wb := (*[BlockQ5_KSize]byte)(w[b*BlockQ5_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		d := da * FP16ToFP32(k456LE16(wb[0:]))
		dmin := -da * FP16ToFP32(k456LE16(wb[2:]))
		k456ScaleMin(wb[k456OffScales:], &sc, &mn)
		k456MinPairs(ab, &bs32)
		var isum int32
		for k := range 8 {
			isum += mn[k] * bs32[k]
		}
		summs += float32(dmin * float32(isum))
		var lanes [8]int32
		q5KLanes(wb, qs, &sc, &lanes)
		for m := range 8 {
			acc[m] = fmath.FMA32(d, float32(lanes[m]), acc[m])
		}
	}
	return hsum8(&acc) + summs
}

// k456NaiveQ4Generic is ggml_vec_dot_q4_K_q8_K_generic with `sums[l] += d *
// aux32[l]` and `sumf -= dmin * sumi` rounded twice, as the source reads.
func k456NaiveQ4Generic(w, a []byte, nb int) float32 {
	var sums [8]float32
	var sumf float32
	var sc, mn [8]int32
	var vals [QK_K]int8
	for b := range nb {
		wb := (*[BlockQ4_KSize]byte)(w[b*BlockQ4_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		k456ScaleMin(wb[k456OffScales:], &sc, &mn)
		var sumi int32
		for j := range QK_K / 16 {
			sumi += k456Bsum(ab, j) * mn[j/2]
		}
		q4KValues(wb, &vals)
		var lanes [8]int32
		k456GenericLanes(&vals, qs, sc[:], 4, &lanes)
		d := FP16ToFP32(k456LE16(wb[0:])) * da
		for l := range 8 {
			sums[l] += float32(d * float32(lanes[l]))
		}
		dmin := FP16ToFP32(k456LE16(wb[2:])) * da
		sumf -= float32(dmin * float32(sumi))
	}
	return k456GenericFinish(sumf, &sums)
}

// k456NaiveQ6Lanes is ggml_vec_dot_q6_K_q8_K with each lane holding its own
// signed products Σ sc·(q−32)·a, the natural reading of "subtract 32"; the
// kernel instead keeps the weights unsigned and subtracts 32·bsums·sc in
// lanes that do not hold those products.
func k456NaiveQ6Lanes(w, a []byte, nb int) float32 {
	var acc [8]float32
	var vals [QK_K]int8
	for b := range nb {
		wb := (*[BlockQ6_KSize]byte)(w[b*BlockQ6_KSize:])
		ab := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		da, qs := k456Q8(ab)
		d := da * FP16ToFP32(k456LE16(wb[q6KOffD:]))
		q6KValues(wb, &vals)
		var lanes [8]int32
		for e := range QK_K {
			lanes[e%32/4] += int32(int8(wb[q6KOffScales+e/16])) * int32(vals[e]-32) * int32(int8(qs[e]))
		}
		for m := range 8 {
			acc[m] = fmath.FMA32(d, float32(lanes[m]), acc[m])
		}
	}
	return hsum8(&acc)
}

// TestK456SourceFaithfulReadingsDiffer counts, on rows of the reference's
// quantizers' own output and quantize_row_q8_K activations, how often each
// naive reading gives another float than the compiled kernel; each must be
// caught at least once.
func TestK456SourceFaithfulReadingsDiffer(t *testing.T) {
	k := k456Kernels(t)
	r := rand.New(rand.NewPCG(81, 82))
	for _, tc := range []struct {
		name   string
		fi     int
		naive  func(w, a []byte, nb int) float32
		refDot func(n int, x, y []byte) float32
	}{
		{"Q5_K vec_dot: summs unfused", 1, k456NaiveQ5Summs, k.VecDotQ5_KQ8_K},
		{"Q4_K _generic: sums and sumf unfused", 0, k456NaiveQ4Generic, k.VecDotQ4_KQ8_KGeneric},
		{"Q6_K vec_dot: signed products per lane", 2, k456NaiveQ6Lanes, k.VecDotQ6_KQ8_K},
	} {
		f := &k456Formats[tc.fi]
		const rows = 2000
		diff := 0
		for range rows {
			nb := 16
			w := make([]byte, nb*f.blockSize)
			f.refQuantize(k)(k456Row(r, nb*QK_K), w)
			a := make([]byte, nb*BlockQ8_KSize)
			k.K456QuantizeRowQ8_K(randRow(r, nb*QK_K), a)
			if !bitsEq(tc.naive(w, a, nb), tc.refDot(nb*QK_K, w, a)) {
				diff++
			}
		}
		t.Logf("%s: differs from the reference on %d/%d rows of 4096", tc.name, diff, rows)
		if diff == 0 {
			t.Errorf("%s: never differs; the oracle cannot tell it apart", tc.name)
		}
	}
}
