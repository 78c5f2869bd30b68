package reference

import (
	"fmt"
	"unsafe"
)

// MulMatGraph is one GGML_OP_MUL_MAT graph of the haswell CPU library kept
// between computations, so that a benchmark can time
// ggml_graph_compute_with_ctx alone (the reference's own matmul: activation
// quantization and one vec_dot per output, in C, without purego's per-call
// overhead). Make one with Kernels.NewMulMatGraph; Close frees it.
type MulMatGraph struct {
	lb              *lowbit
	ctx, a, b, c, g uintptr
	rows, cols, n   int
	weightBytes     int
}

// NewMulMatGraph builds c = mul_mat(a, b) for a rows×cols weight tensor of
// ggml type typ (weightBytes bytes, as ggml_nbytes will confirm) and n f32
// activation columns. Errors: the graph API does not bind, ggml cannot
// allocate the context, or the weight size is not ggml's.
func (k *Kernels) NewMulMatGraph(typ int32, rows, cols, n, weightBytes int) (*MulMatGraph, error) {
	lb, err := k.lowbit()
	if err != nil {
		return nil, err
	}
	g := &MulMatGraph{lb: lb, rows: rows, cols: cols, n: n}
	const ggmlTypeF32 = 0
	// Weights, activations (f32 and their quantized copy in the work
	// buffer), output, graph and padding.
	mem := uintptr(weightBytes + 12*cols*n + 4*rows*n + 16<<20)
	g.ctx = lb.ggmlInit(ggmlInitParams{MemSize: mem})
	if g.ctx == 0 {
		return nil, fmt.Errorf("reference: ggml_init(%d bytes) failed", mem)
	}
	g.a = lb.ggmlNewTensor2(g.ctx, typ, int64(cols), int64(rows))
	g.b = lb.ggmlNewTensor2(g.ctx, ggmlTypeF32, int64(cols), int64(n))
	if g.a == 0 || g.b == 0 {
		lb.ggmlFree(g.ctx)
		return nil, fmt.Errorf("reference: ggml_new_tensor_2d failed")
	}
	g.weightBytes = int(lb.ggmlNbytes(g.a))
	if g.weightBytes != weightBytes {
		lb.ggmlFree(g.ctx)
		return nil, fmt.Errorf("reference: MulMatGraph: ggml needs %d weight bytes, not %d", g.weightBytes, weightBytes)
	}
	g.c = lb.ggmlMulMat(g.ctx, g.a, g.b)
	g.g = lb.ggmlNewGraph(g.ctx)
	lb.ggmlBuildFwd(g.g, g.c)
	return g, nil
}

// SetWeights copies the weights (the tensor's exact byte size) into the graph.
func (g *MulMatGraph) SetWeights(w []byte) error {
	if len(w) != g.weightBytes {
		return fmt.Errorf("reference: MulMatGraph: %d weight bytes, ggml needs %d", len(w), g.weightBytes)
	}
	copy(unsafe.Slice((*byte)(cPointer(g.lb.ggmlGetData(g.a))), len(w)), w)
	return nil
}

// SetInput copies n*cols activations into the graph.
func (g *MulMatGraph) SetInput(x []float32) error {
	if len(x) != g.n*g.cols {
		return fmt.Errorf("reference: MulMatGraph: %d activations, want %d", len(x), g.n*g.cols)
	}
	copy(unsafe.Slice((*float32)(cPointer(g.lb.ggmlGetData(g.b))), len(x)), x)
	return nil
}

// Compute runs the graph on threads threads.
func (g *MulMatGraph) Compute(threads int) error {
	if st := g.lb.ggmlCompute(g.ctx, g.g, int32(threads)); st != 0 {
		return fmt.Errorf("reference: ggml_graph_compute_with_ctx: status %d", st)
	}
	return nil
}

// Output copies the rows*n results into out.
func (g *MulMatGraph) Output(out []float32) {
	copy(out, unsafe.Slice((*float32)(cPointer(g.lb.ggmlGetData(g.c))), g.rows*g.n))
}

// Close frees the graph's context.
func (g *MulMatGraph) Close() {
	if g.ctx != 0 {
		g.lb.ggmlFree(g.ctx)
		g.ctx = 0
	}
}
