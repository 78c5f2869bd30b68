package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
)

// rawEmbeddings is llama-embedding's --embd-output-format raw of vecs, written out from print_raw_embeddings
// (examples/embedding/embedding.cpp): each vector one line, its values "%1.7f" ("%1.0f" with --embd-normalize
// 0) with a space between them, then main's closing LOG("\n").
func rawEmbeddings(vecs [][]float32, norm int) string {
	num := "%1.7f"
	if norm == 0 {
		num = "%1.0f"
	}
	var b strings.Builder
	for _, v := range vecs {
		for i, x := range v {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, num, x)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

// synthReranker writes a tiny bert reranker with n labels (LABEL_0, ...) and the bge vocabulary.
func synthReranker(t *testing.T, labels int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rerank.gguf")
	if code, _, stderr := runCLI("synth", path, "--arch", "bert", "--preset", "tiny", "--type", "q8_0", "--pooling", "rank",
		"--classifier", fmt.Sprint(labels), "--vocab", testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	return path
}

// TestEmbedPrintsLlamaEmbeddingsRaw: --embd-output-format raw is llama-embedding's print_raw_embeddings byte
// for byte: one line per vector (every token row with --pooling none; a rank text's n_cls_out scores), its
// values "%1.7f" ("%1.0f" with --embd-normalize 0, "%1.7f" with -1) separated by single spaces, and the closing
// blank line; nothing else (no "embedding N:" text, no similarity matrix). The vectors are the array output's,
// which TestEmbedPrintsTheReferencesVectors holds to the reference's.
func TestEmbedPrintsLlamaEmbeddingsRaw(t *testing.T) {
	stories := storiesPath(t)
	rerank1, rerank2 := synthReranker(t, 1), synthReranker(t, 2)
	several := []string{"hello world", "naïve café au lait", "a"}
	pairs := []string{"what is a panda?\thi", "what is a panda?\tThe giant panda is a bear species endemic to China."}
	for _, tc := range []struct {
		name    string
		model   string
		texts   []string
		pooling string
		norm    string // "" for the default
		lines   int    // the vectors printed (-1: one per token, not counted here)
	}{
		{name: "several texts print one line of every value each", model: stories, texts: several, pooling: "mean", lines: 3},
		{name: "one text prints one line", model: stories, texts: several[:1], pooling: "cls", norm: "2", lines: 1},
		{name: "--embd-normalize 0 prints the values as %1.0f", model: stories, texts: several, pooling: "mean", norm: "0", lines: 3},
		{name: "--embd-normalize -1 prints the values as %1.7f, unnormalized", model: stories, texts: several[:2], pooling: "last", norm: "-1", lines: 2},
		{name: "--pooling none prints a line per token row", model: stories, texts: several[:2], pooling: "none", lines: -1},
		{name: "rank prints a text's one score per line", model: rerank1, texts: pairs, pooling: "rank", norm: "-1", lines: 2},
		{name: "rank with two labels prints a text's two scores on its line", model: rerank2, texts: pairs, pooling: "rank", norm: "-1", lines: 2},
		{name: "rank scores are normalized as the vectors are", model: rerank2, texts: pairs, pooling: "rank", lines: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{tc.model, "-t", "1", "-p", strings.Join(tc.texts, "\n"), "--pooling", tc.pooling}
			norm := 2
			if tc.norm != "" {
				args = append(args, "--embd-normalize", tc.norm)
				fmt.Sscan(tc.norm, &norm)
			}
			vecs := embedArray(t, args...)
			if tc.lines >= 0 && len(vecs) != tc.lines || len(vecs) <= len(tc.texts) && tc.lines < 0 {
				t.Fatalf("%d vectors, want %d", len(vecs), tc.lines)
			}
			code, stdout, stderr := runCLI(append(append([]string{"embed"}, args...), "--embd-output-format", "raw")...)
			if code != 0 {
				t.Fatalf("exit %d, %s", code, stderr)
			}
			if want := rawEmbeddings(vecs, norm); stdout != want {
				t.Fatalf("stdout\n%q\nwant\n%q", stdout, want)
			}
		})
	}
}

// TestEmbedNormalizesRankScoresAsTheReference: under --pooling rank, each text's scores (the reference's
// llama_get_embeddings_seq: n_cls_out values) are normalized with --embd-normalize as llama-embedding's
// batch_decode normalizes them (libllama-common's common_embd_normalize, default 2), bit for bit, in every
// format; the text prints one "rerank score N: %8.3f" line per label, " [LABEL]" after each when there are
// several, and raw the scores of a text on one line.
func TestEmbedNormalizesRankScoresAsTheReference(t *testing.T) {
	lib := reftest.Lib(t)
	query := "what is a panda?"
	docs := []string{"hi", "The giant panda is a bear species endemic to China."}
	var texts []string
	for _, d := range docs {
		texts = append(texts, query+"\t"+d)
	}
	for _, labels := range []int{1, 2} {
		path := synthReranker(t, labels)
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		var scores [][]float32 // the reference's, unnormalized
		for _, d := range docs {
			toks, err := rm.Tokenize(query+"[SEP]"+d, true, true)
			if err != nil {
				t.Fatal(err)
			}
			e, err := rm.Embed(toks, reference.PoolingRank, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Pooled) != labels {
				t.Fatalf("the reference gives %d scores, want %d", len(e.Pooled), labels)
			}
			scores = append(scores, e.Pooled)
		}
		rm.Close()
		for _, tc := range []struct {
			name   string
			norm   string // "" for the default
			format string
		}{
			{name: "the default normalization is euclidean, as llama-embedding's --embd-normalize 2", format: "array"},
			{name: "--embd-normalize -1 leaves the scores as they are", norm: "-1", format: "array"},
			{name: "--embd-normalize 0 scales the largest score to 32760", norm: "0", format: "array"},
			{name: "--embd-normalize 1 divides by the taxicab norm", norm: "1", format: "array"},
			{name: "--embd-normalize 3 divides by the 3-norm", norm: "3", format: "array"},
			{name: "the text prints the normalized scores, a line per label", format: ""},
			{name: "the text of --embd-normalize -1 prints the scores as they are", norm: "-1", format: ""},
			{name: "raw prints the normalized scores of a text on its line", format: "raw"},
			{name: "raw of --embd-normalize 0 prints them as %1.0f", norm: "0", format: "raw"},
		} {
			t.Run(fmt.Sprintf("%d labels: %s", labels, tc.name), func(t *testing.T) {
				norm := 2
				args := []string{"embed", path, "-t", "1", "-p", strings.Join(texts, "\n")}
				if tc.norm != "" {
					fmt.Sscan(tc.norm, &norm)
					args = append(args, "--embd-normalize", tc.norm)
				}
				var want [][]float32
				for _, s := range scores {
					w, err := lib.EmbdNormalize(s, norm)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, w)
				}
				if tc.format == "array" {
					got := embedArray(t, args[1:]...)
					if fmt.Sprint(bitsOf(got)) != fmt.Sprint(bitsOf(want)) {
						t.Fatalf("scores %v, want the reference's %v", got, want)
					}
					return
				}
				var wantOut string
				switch tc.format {
				case "raw":
					wantOut = rawEmbeddings(want, norm)
				default: // examples/embedding/embedding.cpp: "rerank score %d: %8.3f\n", " [%s]" with several labels
					var b strings.Builder
					b.WriteString("\n")
					for j, w := range want {
						for i, x := range w {
							fmt.Fprintf(&b, "rerank score %d: %8.3f", j, x)
							if labels > 1 {
								fmt.Fprintf(&b, " [LABEL_%d]", i)
							}
							b.WriteString("\n")
						}
					}
					b.WriteString("\n")
					wantOut = b.String()
				}
				if tc.format != "" {
					args = append(args, "--embd-output-format", tc.format)
				}
				code, stdout, stderr := runCLI(args...)
				if code != 0 {
					t.Fatalf("exit %d, %s", code, stderr)
				}
				if stdout != wantOut {
					t.Fatalf("stdout\n%q\nwant\n%q", stdout, wantOut)
				}
			})
		}
	}
}

// bitsOf is the float32 bits of vecs, to compare them exactly.
func bitsOf(vecs [][]float32) [][]uint32 {
	out := make([][]uint32, len(vecs))
	for i, v := range vecs {
		for _, x := range v {
			out[i] = append(out[i], math.Float32bits(x))
		}
	}
	return out
}

// TestEmbedPrintsNumbersAsCPrintf: embed's numbers are C's printf of a float promoted to double, as glibc
// prints them: %W.Pf rounds the exact value half to even, keeps the sign of a negative zero, and writes NaN as
// "nan" or "-nan" (its sign bit set) and infinity as "inf" or "-inf", right-aligned in W (not Go's "NaN" and
// "+Inf"); raw joins them with single spaces.
func TestEmbedPrintsNumbersAsCPrintf(t *testing.T) {
	negNaN := math.Float32frombits(0xffc00000) // the x86 default NaN, 0/0's
	for _, tc := range []struct {
		name   string
		format string
		vecs   [][]float32
		norm   int
		want   string
	}{
		{name: "the text prints NaN and infinity as glibc does, in %9.6f", vecs: [][]float32{{negNaN, float32(math.Inf(-1))}}, norm: 2,
			want: "\nembedding 0:      -nan      -inf \n\n"},
		{name: "raw prints %1.7f with a space between values and a blank line at the end", format: "raw",
			vecs: [][]float32{{0.5, -0.25, 1e-8}, {1, 0, 123.456789}}, norm: 2,
			want: "0.5000000 -0.2500000 0.0000000\n1.0000000 0.0000000 123.4567871\n\n"},
		{name: "raw of --embd-normalize 0 prints %1.0f, ties to even and a negative zero's sign", format: "raw",
			vecs: [][]float32{{32760, -0.5, 1.5, 2.5, -0.3}}, norm: 0,
			want: "32760 -0 2 2 -0\n\n"},
		{name: "raw prints NaN and infinity as glibc does", format: "raw",
			vecs: [][]float32{{negNaN, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}}, norm: -1,
			want: "-nan nan inf -inf\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := printEmbeddings(&b, tc.vecs, make([]string, len(tc.vecs)), tc.format, 1, tc.norm, nil); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name        string
		width, prec int
		x           float32
		want        string
	}{
		{name: "a NaN is right-aligned in the width", width: 9, prec: 6, x: negNaN, want: "     -nan"},
		{name: "an infinity is right-aligned in the width", width: 8, prec: 3, x: float32(math.Inf(1)), want: "     inf"},
		{name: "a finite value is %W.Pf", width: 9, prec: 6, x: -0.125, want: "-0.125000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cFloat(tc.width, tc.prec, tc.x); got != tc.want {
				t.Fatalf("cFloat(%d, %d, %v) = %q, want %q", tc.width, tc.prec, tc.x, got, tc.want)
			}
		})
	}
}

// TestEmbedRefusesANonFiniteValueInJSON: a vector holding NaN or an infinity printed as array, json or json+ is
// an error naming the format, the vector, the value and its index (JSON has no number for them; the default and
// raw formats print them as llama-embedding does), where json.Marshal's bare "unsupported value: NaN" was all.
func TestEmbedRefusesANonFiniteValueInJSON(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for _, tc := range []struct {
		name   string
		format string
		vecs   [][]float32
		want   string
	}{
		{name: "a NaN in the second vector of an array is named with its index", format: "array",
			vecs: [][]float32{{0.5, 0.25}, {0.5, nan}}, want: "--embd-output-format array: vector 1 holds nan at index 1, which JSON has no number for"},
		{name: "an infinity in json is named", format: "json",
			vecs: [][]float32{{inf, 0}}, want: "--embd-output-format json: vector 0 holds -inf at index 0"},
		{name: "json+ with a NaN is refused before its similarity matrix", format: "json+",
			vecs: [][]float32{{1, 0}, {nan, 1}}, want: "--embd-output-format json+: vector 1 holds nan at index 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			err := printEmbeddings(&b, tc.vecs, make([]string, len(tc.vecs)), tc.format, 1, 2, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
				t.Errorf("err %v, printed %q; want an error containing %q and nothing printed", err, b.String(), tc.want)
			}
		})
	}
}
