package sample

import (
	"math"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/internal/stdcpp"
)

// TokenData is llama_token_data: a candidate token, its logit and, once a
// stage has computed them, its probability.
type TokenData struct {
	ID    int32
	Logit float32
	P     float32
}

// candidates is llama_token_data_array: the surviving candidates (XTC may
// move the start, as llama.cpp moves the data pointer), the index of the
// chosen one (-1 before the draw) and whether they are sorted by descending
// logit.
type candidates struct {
	data     []TokenData
	selected int
	sorted   bool
}

// byLogitDesc is llama.cpp's comparator `a.logit > b.logit`.
func byLogitDesc(a, b TokenData) bool { return a.Logit > b.Logit }

// maxf is std::max(a, b) for floats: (a < b) ? b : a.
func maxf(a, b float32) float32 {
	if a < b {
		return b
	}
	return a
}

// cvttss2si is the x86 float-to-int32 conversion C++'s int(float) compiles
// to: truncation, and INT32_MIN for NaN and values outside the int32 range.
func cvttss2si(v float32) int32 {
	if !(v > -0x1p31-1 && v < 0x1p31) {
		return math.MinInt32
	}
	return int32(v)
}

// The histogram of llama_token_data_array_partial_sort: 128 buckets over
// logits [-10, 10).
const (
	nBuckets    = 128
	bucketScale = float32(nBuckets / 20.0) // 6.4f
	bucketInter = float32(64)              // -bucket_low * bucket_scale = 64.0000009 rounded to float
)

// bucketPartialSort is llama_token_data_array_partial_sort: it buckets cur
// by logit into 128 buckets, keeps the top buckets holding at least
// npartial candidates (in their original order within a bucket), std::sorts
// every full bucket and std::partial_sorts the last one, and returns them in
// res (reused): res[:npartial] is sorted by descending logit. npartial must
// be in [1, len(cur)].
func bucketPartialSort(cur []TokenData, npartial int, res []TokenData) []TokenData {
	idx := make([]int32, len(cur))
	var histo [nBuckets]int
	for i := range cur {
		ib := cvttss2si(float32(bucketScale*cur[i].Logit) + bucketInter)
		ib = max(0, min(nBuckets-1, ib))
		idx[i] = ib
		histo[ib]++
	}
	nhave, ib := 0, nBuckets-1
	for ; ib >= 0; ib-- {
		nhave += histo[ib]
		if nhave >= npartial {
			break
		}
	}
	ib = max(ib, 0) // only when npartial > len(cur), which callers rule out
	res = append(res[:0], make([]TokenData, nhave)...)
	var ptrs [nBuckets]int
	pos := 0
	for j := nBuckets - 1; j >= ib; j-- {
		ptrs[j] = pos
		pos += histo[j]
	}
	for i := range cur {
		if j := int(idx[i]); j >= ib {
			res[ptrs[j]] = cur[i]
			ptrs[j]++
		}
	}
	pos, ndone := 0, 0
	for j := nBuckets - 1; j > ib; j-- {
		stdcpp.Sort(res[pos:pos+histo[j]], byLogitDesc)
		pos += histo[j]
		ndone += histo[j]
	}
	stdcpp.PartialSort(res[pos:pos+histo[ib]], npartial-ndone, byLogitDesc)
	return res
}

// partialSortInplace is llama_token_data_array_partial_sort_inplace: keeps
// the top npartial candidates, sorted (std::partial_sort up to 128, the
// bucket sort above).
func (c *candidates) partialSortInplace(npartial int, buf *[]TokenData) {
	if npartial <= 128 {
		stdcpp.PartialSort(c.data, npartial, byLogitDesc)
	} else {
		*buf = bucketPartialSort(c.data, npartial, *buf)
		copy(c.data, (*buf)[:npartial])
	}
	c.data = c.data[:npartial]
	c.sorted = true
}

// softmax is llama_sampler_softmax_impl: sorts first when doSort and not
// sorted, then p = expf(logit - max) / sum, the sum accumulated in float in
// candidate order.
func (c *candidates) softmax(doSort bool, buf *[]TokenData) {
	if len(c.data) == 0 {
		return // GGML_ASSERT(size > 0) in llama.cpp; the chain never empties
	}
	if doSort && !c.sorted {
		c.partialSortInplace(len(c.data), buf)
	}
	maxL := c.data[0].Logit
	if !c.sorted {
		for i := 1; i < len(c.data); i++ {
			maxL = maxf(maxL, c.data[i].Logit)
		}
	}
	var sum float32
	for i := range c.data {
		p := fmath.Expf(c.data[i].Logit - maxL)
		c.data[i].P = p
		sum += p
	}
	for i := range c.data {
		c.data[i].P /= sum
	}
}

// temp is llama_sampler_temp_impl: temp <= 0 keeps the first maximum and sets
// every other logit to -Inf; otherwise logits are divided by temp.
func (c *candidates) temp(temp float32) {
	if len(c.data) == 0 {
		return
	}
	if temp <= 0 {
		maxI, maxL := 0, c.data[0].Logit
		for i := 1; i < len(c.data); i++ {
			if c.data[i].Logit > maxL {
				c.data[maxI].Logit = float32(math.Inf(-1))
				maxI, maxL = i, c.data[i].Logit
			} else {
				c.data[i].Logit = float32(math.Inf(-1))
			}
		}
		return
	}
	for i := range c.data {
		c.data[i].Logit /= temp
	}
}
