package quant

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/parallel"
)

// envSweepChild makes TestVariantSweepChild run (in a child process whose
// reference is the variant BANKML_REFERENCE_VARIANT names).
const envSweepChild = "BANKML_VARIANT_SWEEP_CHILD"

// TestEveryVariantAgainstBankml runs the kernel sweep (TestVariantSweepChild)
// once per CPU variant of the reference that this CPU can execute, each in a
// child process loading that variant's library, and prints the table of
// path × variant: how many rows (outputs) are bit-identical to bankml's
// kernels, which compute the chains of the variant BANKML_MATCH resolves to
// (haswell on a CPU where ggml loads a variant bankml does not model). A
// variant this CPU cannot execute is listed with what it lacks. Only the
// variants bankml matches must be identical everywhere; for the others the
// table is the measurement (docs/exactness.md, "CPU variants"). Sampled by
// default; BANKML_ORACLE_FULL=1 checks more rows.
func TestEveryVariantAgainstBankml(t *testing.T) {
	kernels(t) // skip (or fail under CI) without the reference
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type cell struct {
		same, total int
		modelled    bool // bankml's model of this variant's chain, not haswell's
	}
	var paths []string
	table := map[string]map[Variant]cell{}
	var ran []Variant
	for _, v := range Variants() {
		if err := reference.CanExecute(v); err != nil {
			t.Logf("%s: not run: %v", v, err)
			continue
		}
		cmd := exec.Command(exe, "-test.run=^TestVariantSweepChild$", "-test.v")
		cmd.Env = append(os.Environ(), envSweepChild+"=1", reference.EnvVariant+"="+v.String())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: sweep child: %v\n%s", v, err, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		n := 0
		for sc.Scan() {
			f := strings.Split(strings.TrimSpace(sc.Text()), "\t")
			if len(f) != 5 || f[0] != "SWEEP" {
				continue
			}
			same, _ := strconv.Atoi(f[2])
			total, _ := strconv.Atoi(f[3])
			if table[f[1]] == nil {
				table[f[1]] = map[Variant]cell{}
				paths = append(paths, f[1])
			}
			table[f[1]][v] = cell{same, total, f[4] == "true"}
			n++
		}
		if n == 0 {
			t.Fatalf("%s: the sweep child printed no rows:\n%s", v, out)
		}
		ran = append(ran, v)
	}
	match, err := MatchFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("| path |")
	for _, v := range ran {
		fmt.Fprintf(&sb, " %s |", v)
	}
	sb.WriteString("\n|---|")
	for range ran {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	for _, p := range paths {
		fmt.Fprintf(&sb, "| %s |", p)
		for _, v := range ran {
			c, ok := table[p][v]
			switch {
			case !ok:
				sb.WriteString(" – |")
			case c.same == c.total && c.modelled:
				fmt.Fprintf(&sb, " identical (%d), its chain modelled |", c.total)
			case c.same == c.total:
				fmt.Fprintf(&sb, " identical (%d) |", c.total)
			default:
				fmt.Fprintf(&sb, " differs (%d of %d) |", c.total-c.same, c.total)
			}
			if ok && c.same != c.total && (c.modelled || matchedBy[v] == match.Variant && Modelled(v)) {
				t.Errorf("%s, whose chain bankml models here: %s: %d of %d rows differ", v, p, c.total-c.same, c.total)
			}
		}
		sb.WriteString("\n")
	}
	t.Logf("bankml matching %s against every variant this CPU runs (%d of %d):\n%s", match.Variant, len(ran), len(Variants()), sb.String())
}

// TestVariantSweepChild is the sweep of one variant (see
// TestEveryVariantAgainstBankml); it runs only in that test's child process.
func TestVariantSweepChild(t *testing.T) {
	if os.Getenv(envSweepChild) == "" {
		t.Skip("runs as TestEveryVariantAgainstBankml's child process")
	}
	k := kernels(t)
	full := os.Getenv("BANKML_ORACLE_FULL") == "1"
	r := rand.New(rand.NewPCG(25, 26))
	reportM := func(path string, same, total int, modelled bool) {
		fmt.Printf("SWEEP\t%s\t%d\t%d\t%v\n", path, same, total, modelled)
	}
	report := func(path string, same, total int) { reportM(path, same, total, false) }
	rows := 40
	if full {
		rows = 400
	}
	const cols = 4096

	v, err := reference.ProcessVariant()
	if err != nil {
		t.Fatal(err)
	}
	// Activation quantizers.
	for _, q := range []struct {
		name      string
		block     int
		size      int
		ours, ref func([]float32, []byte)
	}{
		{"quantize_row_q8_0", QK8_0, BlockQ8_0Size, QuantizeRowQ8_0, k.QuantizeRowQ8_0},
		{"quantize_row_q8_1", QK8_1, BlockQ8_1Size, QuantizeRowQ8_1, k.QuantizeRowQ8_1},
		{"quantize_row_q8_K", QK_K, BlockQ8_KSize, QuantizeRowQ8_K, k.QuantizeRowQ8_K},
	} {
		ours, modelled := q.ours, false
		if vq := variantQuantizeQ8_0(v); vq != nil && q.name == "quantize_row_q8_0" {
			ours, modelled = vq, true
		}
		same := 0
		x := make([]float32, cols)
		got, want := make([]byte, cols/q.block*q.size), make([]byte, cols/q.block*q.size)
		for range rows {
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
			}
			ours(x, got)
			q.ref(x, want)
			if bytes.Equal(got, want) {
				same++
			}
		}
		reportM(q.name, same, rows, modelled)
	}

	// Float dots (the f16 one is also attention's KQ dot).
	for _, n := range []int{128, 4096} {
		sameF32, sameF16, sameBF16 := 0, 0, 0
		x, y := make([]float32, n), make([]float32, n)
		xh, yh, xb, yb := make([]uint16, n), make([]uint16, n), make([]uint16, n), make([]uint16, n)
		for range rows {
			for i := range x {
				x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				xh[i], yh[i] = FP32ToFP16(x[i]), FP32ToFP16(y[i])
				xb[i], yb[i] = FP32ToBF16(x[i]), FP32ToBF16(y[i])
			}
			if bitsEq(VecDotF32(x, y), k.VecDotF32(x, y)) {
				sameF32++
			}
			if bitsEq(VecDotF16(xh, yh), k.VecDotF16(xh, yh)) {
				sameF16++
			}
			if bitsEq(VecDotBF16(xb, yb), k.VecDotBF16(xb, yb)) {
				sameBF16++
			}
		}
		report(fmt.Sprintf("ggml_vec_dot_f32 (n=%d)", n), sameF32, rows)
		report(fmt.Sprintf("ggml_vec_dot_f16 (n=%d)", n), sameF16, rows)
		report(fmt.Sprintf("ggml_vec_dot_bf16 (n=%d)", n), sameBF16, rows)
	}

	// Block dots, each type against its activation format: bankml's model
	// of this variant's chain where it has one (variantDot), else haswell's.
	types := []gguf.GGMLType{gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q1_0, gguf.Q2_0, gguf.TQ1_0, gguf.TQ2_0, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}
	for _, typ := range types {
		bk := blockKernels[typ]
		act := "q8_0"
		switch bk.act.size {
		case BlockQ8_1Size:
			act = "q8_1"
		case BlockQ8_KSize:
			act = "q8_K"
		}
		name := "ggml_vec_dot_" + strings.Replace(strings.ToLower(typ.String()), "_k", "_K", 1) + "_" + act
		ref, err := k.VecDotKRaw(name)
		if err != nil {
			t.Fatal(err)
		}
		dot, modelled := bk.dot, false
		if vd := variantDot(v, typ); vd != nil {
			dot, modelled = vd, true
		}
		// Block counts odd and even, short and long: the AVX builds take
		// blocks in pairs and an odd last one apart.
		nbs := []int{1, 2, 3, 5, 8, 13, 16, 31, 128}
		x := make([]float32, 0, 128*QK_K)
		same := 0
		for i := range rows {
			nb := nbs[i%len(nbs)]
			n := nb * typ.BlockSize()
			w := weightsOf(t, r, typ, 1, n)
			x = x[:n]
			for j := range x {
				x[j] = float32(r.NormFloat64())
			}
			a := make([]byte, n/bk.act.block*bk.act.size)
			bk.act.quantize(x, a)
			if bitsEq(dot(w, a, nb), ref(n, w, a)) {
				same++
			}
		}
		reportM(name, same, rows, modelled)
	}

	// ggml_mul_mat graphs: the path ggml_compute_forward_mul_mat takes
	// (vec_dot for one column; llamafile's tinyBLAS for F32/F16/BF16/Q8_0/
	// Q5_0 from two columns where it accepts the shape), and the repacked
	// Q4_0/Q4_K kernels where the variant repacks them (AVX2 builds).
	pool := parallel.New(1)
	defer pool.Close()
	work, err := NewWork(Detect(), pool)
	if err != nil {
		t.Fatal(err)
	}
	work.variant = v // its chains where bankml models them (variantDot)
	// 12 rows: a plain context never repacks, and a model's Q4_0/Q4_K
	// weights are repacked exactly when their rows are a multiple of 8
	// (that case is the CPU_REPACK rows below, at 16 rows).
	mmRows, mmCols := 12, 512
	for _, typ := range append([]gguf.GGMLType{gguf.F32, gguf.F16, gguf.BF16}, types...) {
		w := weightsOf(t, r, typ, mmRows, mmCols)
		m := &Matrix{Name: typ.String(), Type: typ, Rows: mmRows, Cols: mmCols, Data: w}
		for _, cols := range []struct {
			label string
			ns    []int
		}{{"1 column", []int{1}}, {"2–16 columns", []int{2, 5, 16}}} {
			same, total := 0, 0
			for _, n := range cols.ns {
				x := make([]float32, n*mmCols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				want, err := k.GraphMulMat(int32(typ), mmRows, mmCols, w, x, n, 1)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n*mmRows)
				work.MatMul(m, x, n, got)
				for i := range got {
					total++
					if bitsEq(got[i], want[i]) {
						same++
					}
				}
			}
			modelled := variantDot(v, typ) != nil && (cols.ns[0] == 1 || variantVecDotOnly(v, typ))
			reportM(fmt.Sprintf("mul_mat %s, %s", typ, cols.label), same, total, modelled)
		}
	}
	if strings.Contains(strings.Join(v.Features(), " "), "AVX2") {
		mmRows = 16
		for _, typ := range []gguf.GGMLType{gguf.Q4_0, gguf.Q4_K} {
			w := weightsOf(t, r, typ, mmRows, mmCols)
			m := &Matrix{Name: typ.String(), Type: typ, Rows: mmRows, Cols: mmCols, Data: w}
			same, total := 0, 0
			for _, n := range []int{1, 4, 7} {
				x := make([]float32, n*mmCols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				want, err := k.GraphMulMatK456(int32(typ), mmRows, mmCols, w, x, n, 1, true)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n*mmRows)
				MatMul(m, x, n, got, nil)
				for i := range got {
					total++
					if bitsEq(got[i], want[i]) {
						same++
					}
				}
			}
			report(fmt.Sprintf("mul_mat %s repacked (CPU_REPACK)", typ), same, total)
		}
	}
}
