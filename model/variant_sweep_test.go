package model

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/quant"
)

// envOpsChild makes TestVariantOpsChild run (in a child process whose
// reference is the variant BANKML_REFERENCE_VARIANT names).
const envOpsChild = "BANKML_VARIANT_OPS_CHILD"

// TestEveryVariantOpByOp measures, per CPU variant of the reference that
// this CPU can execute (one child process each), which of ggml's whole ops
// give bankml's bits: ggml_vec_swiglu_f32 (ggml_v_expf and SiLU) on its
// own, and the first layer's named tensors of a forward pass (rms_norm,
// RoPE, flash attention, the FFN) on stories260K and synthetic qwen3 files,
// layer 0 only so that each op sees inputs that still agree (a row counted
// "differs" after an earlier differing op may only inherit it); the qwen3
// files (F16 with YaRN, head size 128 with GQA) under BANKML_ORACLE_FULL=1.
// The variants
// bankml matches must be identical everywhere (docs/exactness.md, "CPU
// variants").
func TestEveryVariantOpByOp(t *testing.T) {
	refLib(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type cell struct{ same, total int }
	var paths []string
	table := map[string]map[quant.Variant]cell{}
	var ran []quant.Variant
	for _, v := range quant.Variants() {
		if err := reference.CanExecute(v); err != nil {
			t.Logf("%s: not run: %v", v, err)
			continue
		}
		cmd := exec.Command(exe, "-test.run=^TestVariantOpsChild$", "-test.v")
		cmd.Env = append(os.Environ(), envOpsChild+"=1", reference.EnvVariant+"="+v.String())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: child: %v\n%s", v, err, out)
		}
		n := 0
		for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
			f := strings.Split(strings.TrimSpace(sc.Text()), "\t")
			if len(f) != 4 || f[0] != "OPS" {
				continue
			}
			same, _ := strconv.Atoi(f[2])
			total, _ := strconv.Atoi(f[3])
			if table[f[1]] == nil {
				table[f[1]] = map[quant.Variant]cell{}
				paths = append(paths, f[1])
			}
			table[f[1]][v] = cell{same, total}
			n++
		}
		if n == 0 {
			t.Fatalf("%s: the child printed no rows:\n%s", v, out)
		}
		ran = append(ran, v)
	}
	match, err := quant.MatchFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("| op (tensor) |")
	for _, v := range ran {
		fmt.Fprintf(&sb, " %s |", v)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(ran)) + "\n")
	for _, p := range paths {
		fmt.Fprintf(&sb, "| %s |", p)
		for _, v := range ran {
			c, ok := table[p][v]
			switch {
			case !ok:
				sb.WriteString(" – |")
			case c.same == c.total:
				fmt.Fprintf(&sb, " identical (%d) |", c.total)
			default:
				fmt.Fprintf(&sb, " differs (%d of %d) |", c.total-c.same, c.total)
			}
			if ok && c.same != c.total && v == match.Variant {
				t.Errorf("%s, the variant bankml matches: %s: %d of %d rows differ", v, p, c.total-c.same, c.total)
			}
		}
		sb.WriteString("\n")
	}
	t.Logf("bankml matching %s, op by op, against every variant this CPU runs (%d of %d):\n%s", match.Variant, len(ran), len(quant.Variants()), sb.String())
}

// TestVariantOpsChild is one variant's part of TestEveryVariantOpByOp; it
// runs only in that test's child process.
func TestVariantOpsChild(t *testing.T) {
	if os.Getenv(envOpsChild) == "" {
		t.Skip("runs as TestEveryVariantOpByOp's child process")
	}
	report := func(path string, same, total int) { fmt.Printf("OPS\t%s\t%d\t%d\n", path, same, total) }

	k, err := reference.LoadKernels()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(27, 28))
	same, total := 0, 0
	for _, n := range []int{7, 64, 1029, 12288} {
		for trial := range 10 {
			x, g := make([]float32, n), make([]float32, n)
			for i := range x {
				scale := 4.0
				if trial%5 == 0 {
					scale = 120
				}
				x[i], g[i] = float32(r.NormFloat64()*scale), float32(r.NormFloat64())
			}
			got, want := make([]float32, n), make([]float32, n)
			swiglu(quant.LevelGeneric, got, x, g)
			k.SwiGLU(want, x, g)
			for i := range got {
				total++
				if math.Float32bits(got[i]) == math.Float32bits(want[i]) {
					same++
				}
			}
		}
	}
	report("ggml_vec_swiglu_f32 (values)", same, total)

	lib := refLib(t)
	type file struct{ name, path string }
	files := []file{{"stories260K", filepath.Join(modelsDir(t), "stories260K.gguf")}}
	if os.Getenv("BANKML_ORACLE_FULL") == "1" { // ~1 CPU-minute more per variant
		for _, s := range []synthModel{
			{arch: "qwen3", preset: "tiny", typ: gguf.F16, yarn: true, seed: 4},
			{arch: "qwen3", preset: "tiny-hd128", typ: gguf.Q1_0, yarn: true, seed: 8},
		} {
			files = append(files, file{s.String(), s.path(t)})
		}
	}
	for _, f := range files {
		rm, err := lib.LoadModel(f.path)
		if err != nil {
			t.Fatal(err)
		}
		m := loadModel(t, f.path)
		toks, err := rm.Tokenize(chatML("", chatPrompt28), true, true)
		if err != nil {
			t.Fatal(err)
		}
		layer0 := func(name string) bool { return strings.HasSuffix(name, "-0") || name == "result_output" }
		ts, err := rm.TraceOutputs(toks, 1, true, layer0)
		if err != nil {
			t.Fatal(err)
		}
		ref := map[string][]float32{}
		var order []string
		for _, x := range ts {
			if _, seen := ref[x.Name]; !seen {
				order = append(order, x.Name)
			}
			ref[x.Name] = x.Data // the last node of a name: Qcur/Kcur after RoPE
		}
		rows := map[string][2]int{}
		c := newCtx(t, m, len(toks), 1)
		c.trace = func(name string, got []float32) {
			want, ok := ref[name]
			if !ok || !layer0(name) || len(want) != len(got) {
				return
			}
			width := len(got) / len(toks)
			eq := 0
			for row := range len(toks) {
				same := true
				for i := row * width; i < (row+1)*width; i++ {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						same = false
						break
					}
				}
				if same {
					eq++
				}
			}
			rows[name] = [2]int{eq, len(toks)}
		}
		if _, err := c.DecodeAll(toks); err != nil {
			t.Fatal(err)
		}
		for _, name := range order {
			if n, ok := rows[name]; ok {
				report(f.name+" "+name, n[0], n[1])
			}
		}
		rm.Close()
	}
}

// TestWholeModelOraclesAgainstAutoVariant runs the greedy oracles (stories260K
// files, the synthetic qwen3 files, and under BANKML_ORACLE_HEAVY=1 the
// Bonsai-8B-shaped ones) against the CPU variant ggml loads on this CPU as
// well as haswell (reftest.AgainstAutoVariant).
func TestWholeModelOraclesAgainstAutoVariant(t *testing.T) {
	reftest.AgainstAutoVariant(t, "^(TestGreedyMatchesReference|TestQwen3GreedyMatchesReference|TestQwen3Bonsai8BMatchesReference)$")
}
