package reference

import (
	"fmt"
	"sync"
)

// Oracles of the exported plain-C scalar loops of the Q8_0-activation
// formats in libggml-cpu-haswell.so: ggml_vec_dot_q8_0_q8_0_generic,
// ggml_vec_dot_q4_0_q8_0_generic and ggml_vec_dot_q1_0_q8_0_generic (the
// library does not export ggml_vec_dot_q2_0_q8_0_generic), bound lazily on
// first use so that a missing symbol fails only these tests.
type genericQ8 struct {
	once sync.Once
	err  error

	dotQ8_0Generic, dotQ4_0Generic, dotQ1_0Generic dotFunc
}

var genericQ8Kernels genericQ8

func (k *Kernels) genericQ8() (*genericQ8, error) {
	g := &genericQ8Kernels
	g.once.Do(func() {
		g.err = k.bindAll([]binding{
			{&g.dotQ8_0Generic, "ggml_vec_dot_q8_0_q8_0_generic"},
			{&g.dotQ4_0Generic, "ggml_vec_dot_q4_0_q8_0_generic"},
			{&g.dotQ1_0Generic, "ggml_vec_dot_q1_0_q8_0_generic"},
		})
	})
	if g.err != nil {
		return nil, fmt.Errorf("reference: Q8_0-activation _generic kernels: %w", g.err)
	}
	return g, nil
}

// GenericQ8Err reports whether the Q8_0/Q4_0/Q1_0 _generic oracles bind;
// the other methods of this file panic when they do not.
func (k *Kernels) GenericQ8Err() error {
	_, err := k.genericQ8()
	return err
}

func (k *Kernels) mustGenericQ8() *genericQ8 {
	g, err := k.genericQ8()
	if err != nil {
		panic(err)
	}
	return g
}

// VecDotQ8_0Q8_0Generic is ggml_vec_dot_q8_0_q8_0_generic of the haswell
// library over n values (n/32 Q8_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ8_0Q8_0Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustGenericQ8().dotQ8_0Generic, n, x, y)
}

// VecDotQ4_0Q8_0Generic is ggml_vec_dot_q4_0_q8_0_generic of the haswell
// library over n values (n/32 Q4_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ4_0Q8_0Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustGenericQ8().dotQ4_0Generic, n, x, y)
}

// VecDotQ1_0Q8_0Generic is ggml_vec_dot_q1_0_q8_0_generic of the haswell
// library over n values (n/128 Q1_0 blocks against n/32 Q8_0 blocks).
func (k *Kernels) VecDotQ1_0Q8_0Generic(n int, x, y []byte) float32 {
	return legacyCallDot(k.mustGenericQ8().dotQ1_0Generic, n, x, y)
}
