package train

import (
	"math"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// Float is the element type of the ops: float32 trains, float64 checks the gradients.
type Float interface{ ~float32 | ~float64 }

// exec is where the ops run: the pool that shares their rows and the CPU level of the float32 product.
type exec struct {
	pool  *parallel.Pool
	level quant.Level
}

// strip is the number of rows one task of an op takes: fixed, so that the partition of every reduction is the same
// for any number of workers.
const strip = quant.GemmTileRows

// rows runs f on the strips [lo, hi) of n rows (fixed strips of the given size), on the pool.
func (e *exec) rows(n, size int, f func(lo, hi int)) {
	units := (n + size - 1) / size
	e.pool.Run(units, 1, jobFunc(func(lo, hi int) {
		for u := lo; u < hi; u++ {
			f(u*size, min(n, (u+1)*size))
		}
	}))
}

// jobFunc adapts a function of a range of units to parallel.Job.
type jobFunc func(lo, hi int)

func (j jobFunc) Do(_, lo, hi int) { j(lo, hi) }

// matmul sets c (m×n) = a (m×k) · b (k×n), all row-major: quant's GemmF32 on strips of rows for float32, the
// same chain without fused steps for float64.
func matmul[F Float](e *exec, c, a, b []F, m, n, k int) {
	if c32, ok := any(c).([]float32); ok {
		a32, b32 := any(a).([]float32), any(b).([]float32)
		e.rows(m, strip, func(lo, hi int) { e.level.GemmF32(c32, a32, b32, m, n, k, lo, hi, false) })
		return
	}
	e.rows(m, strip, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			cr := c[i*n : i*n+n]
			clear(cr)
			for p, av := range a[i*k : i*k+k] {
				for j, bv := range b[p*n : p*n+n] {
					cr[j] += av * bv
				}
			}
		}
	})
}

// transpose sets dst (cols×rows) to the transpose of src (rows×cols).
func transpose[F Float](e *exec, dst, src []F, rows, cols int) {
	e.rows(cols, 64, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			d := dst[j*rows : j*rows+rows]
			for i := range d {
				d[i] = src[i*cols+j]
			}
		}
	})
}

// linearForward sets y (n×out) = x (n×in) · Wᵀ, given wT = Wᵀ (in×out).
func linearForward[F Float](e *exec, y, x, wT []F, n, in, out int) { matmul(e, y, x, wT, n, out, in) }

// linearBackward sets dx (n×in) = dy·W when dx is not nil, and dW (out×in) = dyᵀ·x when dw is not nil; dyT is
// scratch of out×n.
func linearBackward[F Float](e *exec, dx, dw, dy, x, w, dyT []F, n, in, out int) {
	if dx != nil {
		matmul(e, dx, dy, w, n, in, out)
	}
	if dw != nil {
		transpose(e, dyT, dy, n, out)
		matmul(e, dw, dyT, x, out, in, n)
	}
}

// rmsNormForward sets y[t] = x[t]/sqrt(mean(x[t]²)+eps) ⊙ g for n rows of d (llama.cpp's ggml_rms_norm then the
// weight), and rstd[t] = 1/sqrt(mean+eps). The mean is summed in float64.
func rmsNormForward[F Float](e *exec, y, rstd, x, g []F, n, d int, eps float64) {
	e.rows(n, strip, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			xr := x[t*d : t*d+d]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			r := F(1 / math.Sqrt(ss/float64(d)+eps))
			rstd[t] = r
			yr := y[t*d : t*d+d]
			for i, v := range xr {
				yr[i] = v * r * g[i]
			}
		}
	})
}

// gradChunk is the number of rows of one partial sum of a weight's gradient over rows: the partial sums are added
// in chunk order, so the total does not depend on the number of workers.
const gradChunk = 64

// rmsNormBackward sets dx from dy (the rows of rmsNormForward) and adds the weight's gradient to dg; part is
// scratch of ceil(n/gradChunk)·d.
func rmsNormBackward[F Float](e *exec, dx, dg, dy, x, g, rstd, part []F, n, d int) {
	e.rows(n, gradChunk, func(lo, hi int) {
		pg := part[lo/gradChunk*d : lo/gradChunk*d+d]
		clear(pg)
		for t := lo; t < hi; t++ {
			xr, dyr, dxr := x[t*d:t*d+d], dy[t*d:t*d+d], dx[t*d:t*d+d]
			r := rstd[t]
			var dot float64
			for i, v := range xr {
				dot += float64(dyr[i]) * float64(g[i]) * float64(v)
				pg[i] += dyr[i] * v * r
			}
			c := F(dot * float64(r) * float64(r) * float64(r) / float64(d))
			for i, v := range xr {
				dxr[i] = dyr[i]*g[i]*r - v*c
			}
		}
	})
	for c := 0; c*gradChunk < n; c++ {
		for i, v := range part[c*d : c*d+d] {
			dg[i] += v
		}
	}
}

// rope holds the rotation of llama's RoPE (LLAMA_ROPE_TYPE_NORM: the pairs (2i, 2i+1) of each head turned by
// pos·base^(−2i/headDim)) for positions 0..ctx-1: cos and sin of ctx × headDim/2 angles, computed in float64.
type rope[F Float] struct {
	half     int
	cos, sin []F
}

func newRope[F Float](ctx, headDim int, base float64) *rope[F] {
	r := &rope[F]{half: headDim / 2, cos: make([]F, ctx*headDim/2), sin: make([]F, ctx*headDim/2)}
	for p := range ctx {
		for i := range r.half {
			a := float64(p) * math.Pow(base, -2*float64(i)/float64(headDim))
			r.cos[p*r.half+i], r.sin[p*r.half+i] = F(math.Cos(a)), F(math.Sin(a))
		}
	}
	return r
}

// apply rotates in place the heads of x (n rows of heads·2·half; row t at position t mod seq) forward, or
// backward (by the opposite angle: the gradient of a rotation is the transposed rotation).
func (r *rope[F]) apply(e *exec, x []F, n, seq, heads int, backward bool) {
	hd := 2 * r.half
	e.rows(n, strip, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			p := t % seq
			cs, sn := r.cos[p*r.half:p*r.half+r.half], r.sin[p*r.half:p*r.half+r.half]
			for h := range heads {
				v := x[t*heads*hd+h*hd : t*heads*hd+h*hd+hd]
				for i := range r.half {
					c, s := cs[i], sn[i]
					if backward {
						s = -s
					}
					a, b := v[2*i], v[2*i+1]
					v[2*i] = a*c - b*s
					v[2*i+1] = a*s + b*c
				}
			}
		}
	})
}

// attnShape is the shape of causal multi-head attention with grouped K/V heads over batch sequences of seq tokens.
type attnShape struct {
	batch, seq, heads, kvHeads, headDim int
}

func (s attnShape) scale() float64 { return 1 / math.Sqrt(float64(s.headDim)) }

// mm sets c (m×n) = a (m×k) · b (k×n) on the calling goroutine (the ops' tasks call it): quant's GemmF32 for
// float32, the same chain without fused steps for float64.
func mm[F Float](l quant.Level, c, a, b []F, m, n, k int) {
	if c32, ok := any(c).([]float32); ok {
		l.GemmF32(c32, any(a).([]float32), any(b).([]float32), m, n, k, 0, m, false)
		return
	}
	for i := range m {
		cr := c[i*n : i*n+n]
		clear(cr)
		for p, av := range a[i*k : i*k+k] {
			for j, bv := range b[p*n : p*n+n] {
				cr[j] += av * bv
			}
		}
	}
}

// headScratch is one attention task's matrices: a head's Q, K, V and their transposes, and seq×seq products.
type headScratch[F Float] struct {
	q, kT, v, vT, o, s, s2, g, g2 []F
}

func newHeadScratch[F Float](seq, hd int) *headScratch[F] {
	f := func(n int) []F { return make([]F, n) }
	return &headScratch[F]{q: f(seq * hd), kT: f(seq * hd), v: f(seq * hd), vT: f(seq * hd), o: f(seq * hd),
		s: f(seq * seq), s2: f(seq * seq), g: f(seq * hd), g2: f(seq * hd)}
}

// gather copies head h's columns (width hd) of the seq rows of x (row width w) starting at row r0 into dst
// (seq×hd), and, when dstT is not nil, their transpose into dstT (hd×seq).
func gather[F Float](dst, dstT, x []F, r0, seq, w, col, hd int) {
	for t := range seq {
		src := x[(r0+t)*w+col : (r0+t)*w+col+hd]
		copy(dst[t*hd:t*hd+hd], src)
		if dstT != nil {
			for i, v := range src {
				dstT[i*seq+t] = v
			}
		}
	}
}

// attentionForward sets o (n×heads·hd) = softmax(q·kᵀ·scale, causal)·v per sequence and head, query head h
// reading K/V head h/(heads/kvHeads), and keeps the probabilities in p (batch·heads·seq·seq; zero above the
// diagonal). The softmax sums in float64. Each task is one (sequence, head): its products are dense seq×seq
// matrices through mm (the masked half computed and discarded).
func attentionForward[F Float](e *exec, o, p, q, k, v []F, s attnShape) {
	hd, nq, nkv, T := s.headDim, s.heads*s.headDim, s.kvHeads*s.headDim, s.seq
	group := s.heads / s.kvHeads
	sc := F(s.scale())
	e.rows(s.batch*s.heads, 1, func(lo, hi int) {
		w := newHeadScratch[F](T, hd)
		for u := lo; u < hi; u++ {
			b, h := u/s.heads, u%s.heads
			kh := h / group
			gather(w.q, nil, q, b*T, T, nq, h*hd, hd)
			gather(w.v, w.kT, k, b*T, T, nkv, kh*hd, hd) // w.v holds K here; only its transpose is used
			gather(w.v, nil, v, b*T, T, nkv, kh*hd, hd)
			pp := p[u*T*T : (u+1)*T*T]
			mm(e.level, pp, w.q, w.kT, T, T, hd)
			for t := range T {
				row := pp[t*T : t*T+T]
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					row[j] *= sc
					mx = max(mx, float64(row[j]))
				}
				var sum float64
				for j := 0; j <= t; j++ {
					ex := math.Exp(float64(row[j]) - mx)
					row[j] = F(ex)
					sum += ex
				}
				inv := 1 / sum
				for j := 0; j <= t; j++ {
					row[j] = F(float64(row[j]) * inv)
				}
				clear(row[t+1:])
			}
			mm(e.level, w.o, pp, w.v, T, hd, T)
			for t := range T {
				copy(o[(b*T+t)*nq+h*hd:(b*T+t)*nq+h*hd+hd], w.o[t*hd:t*hd+hd])
			}
		}
	})
}

// attentionBackward sets dq, dk and dv from do and the probabilities of attentionForward. One task owns a
// sequence's K/V head and its group of query heads (added in head order), so each gradient element has one
// writer and a fixed order.
func attentionBackward[F Float](e *exec, dq, dk, dv, do, p, q, k, v []F, s attnShape) {
	hd, nq, nkv, T := s.headDim, s.heads*s.headDim, s.kvHeads*s.headDim, s.seq
	group := s.heads / s.kvHeads
	sc := F(s.scale())
	e.rows(s.batch*s.kvHeads, 1, func(lo, hi int) {
		w := newHeadScratch[F](T, hd)
		kk, qT, pT, dsT := make([]F, T*hd), make([]F, hd*T), make([]F, T*T), make([]F, T*T)
		for u := lo; u < hi; u++ {
			b, kh := u/s.kvHeads, u%s.kvHeads
			gather(kk, nil, k, b*T, T, nkv, kh*hd, hd)
			gather(w.v, w.vT, v, b*T, T, nkv, kh*hd, hd)
			for t := range T {
				clear(dk[(b*T+t)*nkv+kh*hd : (b*T+t)*nkv+kh*hd+hd])
				clear(dv[(b*T+t)*nkv+kh*hd : (b*T+t)*nkv+kh*hd+hd])
			}
			for h := kh * group; h < (kh+1)*group; h++ {
				pp := p[(b*s.heads+h)*T*T : (b*s.heads+h+1)*T*T]
				gather(w.o, nil, do, b*T, T, nq, h*hd, hd) // dO of the head
				gather(w.q, qT, q, b*T, T, nq, h*hd, hd)
				// dV += Pᵀ·dO
				for t := range T {
					for j := range T {
						pT[j*T+t] = pp[t*T+j]
					}
				}
				mm(e.level, w.g, pT, w.o, T, hd, T)
				for t := range T {
					r := dv[(b*T+t)*nkv+kh*hd : (b*T+t)*nkv+kh*hd+hd]
					for i, x := range w.g[t*hd : t*hd+hd] {
						r[i] += x
					}
				}
				// dP = dO·Vᵀ; dS = P ⊙ (dP − rowsum(P ⊙ dP)) · scale
				mm(e.level, w.s, w.o, w.vT, T, T, hd)
				for t := range T {
					row, dp := pp[t*T:t*T+T], w.s[t*T:t*T+T]
					var sum float64
					for j := 0; j <= t; j++ {
						sum += float64(row[j]) * float64(dp[j])
					}
					sm := F(sum)
					for j := 0; j <= t; j++ {
						dp[j] = row[j] * (dp[j] - sm) * sc
					}
					clear(dp[t+1:])
				}
				// dQ = dS·K
				mm(e.level, w.g, w.s, kk, T, hd, T)
				for t := range T {
					copy(dq[(b*T+t)*nq+h*hd:(b*T+t)*nq+h*hd+hd], w.g[t*hd:t*hd+hd])
				}
				// dK += dSᵀ·Q
				for t := range T {
					for j := range T {
						dsT[j*T+t] = w.s[t*T+j]
					}
				}
				mm(e.level, w.g2, dsT, w.q, T, hd, T)
				for t := range T {
					r := dk[(b*T+t)*nkv+kh*hd : (b*T+t)*nkv+kh*hd+hd]
					for i, x := range w.g2[t*hd : t*hd+hd] {
						r[i] += x
					}
				}
			}
		}
	})
}

// sigmoid is 1/(1+e^−x) in float64.
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// swigluForward sets a = silu(g) ⊙ u elementwise (llama's feed-forward: ggml_swiglu_split).
func swigluForward[F Float](e *exec, a, g, u []F, n int) {
	e.rows(n, 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(g[i])
			a[i] = F(x*sigmoid(x)) * u[i]
		}
	})
}

// swigluBackward sets dg and du from da.
func swigluBackward[F Float](e *exec, dg, du, da, g, u []F, n int) {
	e.rows(n, 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(g[i])
			sg := sigmoid(x)
			du[i] = da[i] * F(x*sg)
			dg[i] = da[i] * u[i] * F(sg*(1+x*(1-sg)))
		}
	})
}

// embedForward sets the rows of y (n×d) to the rows of table (vocab×d) named by tokens.
func embedForward[F Float](y, table []F, tokens []int32, d int) {
	for t, id := range tokens {
		copy(y[t*d:t*d+d], table[int(id)*d:int(id)*d+d])
	}
}

// embedBackward adds dy's rows to the rows of dtable named by tokens, in token order.
func embedBackward[F Float](dtable, dy []F, tokens []int32, d int) {
	for t, id := range tokens {
		r := dtable[int(id)*d : int(id)*d+d]
		for i, v := range dy[t*d : t*d+d] {
			r[i] += v
		}
	}
}

// lossRow is one position's share of the loss.
type lossRow struct{ ce, kl float64 }

// Soft are sparse soft targets: for each of n positions the teacher's K most likely next tokens and their
// probabilities (ID −1 pads a position with fewer, or none).
type Soft struct {
	K  int
	ID []int32   // n·K
	P  []float32 // n·K
}

// crossEntropy scores n rows of logits (n×vocab) against targets: the loss of row t is
// (1−λ)·(−log q[y_t]) + λ·(−Σ_v p̃_t[v]·log q[v]) with q = softmax(z) and p̃_t the teacher's top-K probabilities
// renormalized to sum 1 (λ = 0 when soft is nil or row t has none). It sets dz = (q − target)/n with target the
// same mix, and returns per row the hard cross-entropy and KL(p̃_t ‖ q). Softmaxes and logs are float64.
func crossEntropy[F Float](e *exec, dz, z []F, targets []int32, soft *Soft, lambda float64, rows []lossRow, n, vocab int) {
	e.rows(n, strip, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			zr := z[t*vocab : t*vocab+vocab]
			mx := math.Inf(-1)
			for _, v := range zr {
				mx = max(mx, float64(v))
			}
			var sum float64
			for _, v := range zr {
				sum += math.Exp(float64(v) - mx)
			}
			lse := mx + math.Log(sum)
			y := targets[t]
			r := lossRow{ce: lse - float64(zr[y])}
			dr := dz[t*vocab : t*vocab+vocab]
			for i, v := range zr {
				dr[i] = F(math.Exp(float64(v) - lse))
			}
			lam := 0.0
			if soft != nil && lambda != 0 {
				ids, ps := soft.ID[t*soft.K:(t+1)*soft.K], soft.P[t*soft.K:(t+1)*soft.K]
				var tot float64
				for i, id := range ids {
					if id >= 0 {
						tot += float64(ps[i])
					}
				}
				if tot > 0 {
					lam = lambda
					for i, id := range ids {
						if id < 0 || ps[i] <= 0 {
							continue
						}
						p := float64(ps[i]) / tot
						r.kl += p * (math.Log(p) - (float64(zr[id]) - lse))
						dr[id] = F(float64(dr[id]) - lam*p)
					}
				}
			}
			dr[y] = F(float64(dr[y]) - (1 - lam))
			for i := range dr {
				dr[i] = F(float64(dr[i]) / float64(n))
			}
			rows[t] = r
		}
	})
}
