// Package embed post-processes embedding vectors as llama-server and Ollama
// return them: L2 and p-norm normalisation, pooling names, and the cosine
// similarity llama-embedding prints.
//
// # Design record
//
// What it does: Normalize is common_embd_normalize (common/common.cpp), which
// llama-server applies to every pooled vector with the request's
// embd_normalize (default 2: euclidean; -1 none, 0 max-absolute scaled to
// int16, p > 2 the p-norm); NormalizeOllama is Ollama's normalize
// (server/routes.go), the float32 L2 normalisation of /api/embed. The pooling
// itself (none, mean, cls, last, rank) is part of the model's graph (package
// model, src/llama-graph.cpp build_pooling); ParsePooling reads its names as
// llama-server's --pooling does. SimilarityCos is common_embd_similarity_cos,
// the cosine similarity llama-embedding prints (its matrix, json+).
//
// Determinism: pure functions. Normalize's sums run in float64 in index
// order with each square rounded to float32 first, its p-norm through
// fmath.Pow (glibc's pow), exactly as the compiled libllama-common computes
// them (TestNormalizeMatchesReference). SimilarityCos rounds each product to
// float32 and sums in float64 in index order, as the compiled
// common_embd_similarity_cos does (no fused multiply-add there;
// TestSimilarityCosMatchesReference).
package embed

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bankml/bankml/fmath"
)

// Pooling is how one vector is made of a sequence's rows (enum
// llama_pooling_type, include/llama.h).
type Pooling int

// The pooling types.
const (
	PoolingUnspecified Pooling = -1 // the model's {arch}.pooling_type
	PoolingNone        Pooling = 0  // every token's row
	PoolingMean        Pooling = 1  // the mean of the rows
	PoolingCLS         Pooling = 2  // the first row
	PoolingLast        Pooling = 3  // the last row
	PoolingRank        Pooling = 4  // the first row through the ranking head: a score
)

var poolingNames = []string{"none", "mean", "cls", "last", "rank"}

// String is the name llama-server's --pooling takes ("unspecified" for -1).
func (p Pooling) String() string {
	if p >= 0 && int(p) < len(poolingNames) {
		return poolingNames[p]
	}
	if p == PoolingUnspecified {
		return "unspecified"
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// ErrPooling is wrapped by ParsePooling's errors.
var ErrPooling = errors.New("unknown pooling type")

// ParsePooling reads a --pooling value (common/arg.cpp: none, mean, cls,
// last, rank); "" is PoolingUnspecified.
func ParsePooling(s string) (Pooling, error) {
	if s == "" {
		return PoolingUnspecified, nil
	}
	for i, n := range poolingNames {
		if s == n {
			return Pooling(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (have %s)", ErrPooling, s, strings.Join(poolingNames, ", "))
}

// Normalize writes v normalised as common_embd_normalize(v, dst, n, norm)
// does into dst (len(dst) >= len(v); dst may be v): norm -1 leaves v as it
// is, 0 divides by the largest absolute value over 32760, 2 by the
// euclidean norm (the sum of float32 squares in float64), any other p by
// the p-norm (glibc's pow in float64); the scale 1/sum is rounded to float32
// and 0 when the sum is 0.
func Normalize(dst, v []float32, norm int) {
	var sum float64
	switch norm {
	case -1:
		sum = 1
	case 0:
		for _, x := range v {
			if a := float64(float32(math.Abs(float64(x)))); sum < a {
				sum = a
			}
		}
		sum /= 32760.0
	case 2:
		for _, x := range v {
			sum += float64(x * x)
		}
		sum = math.Sqrt(sum)
	default:
		p := float64(norm)
		for _, x := range v {
			sum += fmath.Pow(math.Abs(float64(x)), p)
		}
		sum = fmath.Pow(sum, 1.0/p)
	}
	var scale float32
	if sum > 0 {
		scale = float32(1.0 / sum)
	}
	for i, x := range v {
		dst[i] = x * scale
	}
}

// ErrNotFinite is NormalizeOllama's error for a vector holding NaN or Inf.
var ErrNotFinite = errors.New("embedding contains NaN or Inf values")

// NormalizeOllama normalises v in place as Ollama's /api/embed does
// (server/routes.go normalize): the float32 sum of squares, scale
// float32(1/max(sqrt(sum), 1e-12)) in float64; a NaN or Inf is ErrNotFinite.
func NormalizeOllama(v []float32) error {
	var sum float32
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return ErrNotFinite
		}
		sum += float32(x * x)
	}
	norm := float32(1.0 / max(math.Sqrt(float64(sum)), 1e-12))
	for i := range v {
		v[i] *= norm
	}
	return nil
}

// SimilarityCos is common_embd_similarity_cos(a, b, n) (common/common.cpp),
// the cosine similarity llama-embedding prints in its matrix, with the
// reference's arithmetic: each product rounded to float32, then summed in
// float64 in index order (no fused multiply-add: the compiled
// libllama-common has none there), the quotient sum/(sqrt(sum1)*sqrt(sum2))
// in float64 rounded to float32. Two zero vectors are 1, one zero vector 0.
// The length is len(a) (b is as long or longer).
func SimilarityCos(a, b []float32) float32 {
	var sum, sum1, sum2 float64
	for i, x := range a {
		y := b[i]
		sum += float64(x * y)
		sum1 += float64(x * x)
		sum2 += float64(y * y)
	}
	if sum1 == 0 || sum2 == 0 {
		if sum1 == 0 && sum2 == 0 {
			return 1
		}
		return 0
	}
	return float32(sum / (math.Sqrt(sum1) * math.Sqrt(sum2)))
}
