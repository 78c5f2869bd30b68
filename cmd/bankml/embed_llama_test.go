package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/embed"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
)

// embedArray runs embed with --embd-output-format array and the flags, and returns the vectors.
func embedArray(t *testing.T, args ...string) [][]float32 {
	t.Helper()
	code, stdout, stderr := runCLI(append(append([]string{"embed"}, args...), "--embd-output-format", "array")...)
	if code != 0 {
		t.Fatalf("embed %q: exit %d, %s", args, code, stderr)
	}
	var arrs [][]float64
	if err := json.Unmarshal([]byte(stdout), &arrs); err != nil {
		t.Fatalf("embed %q: %v %q", args, err, stdout)
	}
	vecs := make([][]float32, len(arrs))
	for i, a := range arrs {
		for _, x := range a {
			vecs[i] = append(vecs[i], float32(x))
		}
	}
	return vecs
}

// TestEmbedPrintsLlamaEmbeddingsTextAndJSONPlus: embed's default output is llama-embedding's text byte for byte
// (examples/embedding/embedding.cpp, written out here from its printf formats): a blank line, "embedding N: "
// lines (with pooling none each row's first and last three values, else a text's every value or, of several,
// the first 16), for several texts the cosine similarity matrix (common_embd_similarity_cos, "%6.2f ") under
// "%6.6s " of each text and with "%1.10s" of its own (bytes, not characters), and a closing blank line;
// --embd-output-format json+ is json with "cosineSimilarity", the matrix, when there are several texts.
func TestEmbedPrintsLlamaEmbeddingsTextAndJSONPlus(t *testing.T) {
	model := storiesPath(t)
	several := []string{"hello world", "naïve café au lait", "a"}
	text := func(vecs [][]float32, texts []string, pooling string, norm int) string {
		num := "%9.6f "
		if norm == 0 {
			num = "%6.0f "
		}
		var b strings.Builder
		b.WriteString("\n")
		for j, v := range vecs {
			fmt.Fprintf(&b, "embedding %d: ", j)
			switch {
			case pooling == "none":
				for i := 0; i < 3; i++ {
					fmt.Fprintf(&b, num, v[i])
				}
				b.WriteString(" ... ")
				for i := len(v) - 3; i < len(v); i++ {
					fmt.Fprintf(&b, num, v[i])
				}
			case len(texts) > 1:
				for i := 0; i < 16; i++ {
					fmt.Fprintf(&b, num, v[i])
				}
			default:
				for i := range v {
					fmt.Fprintf(&b, num, v[i])
				}
			}
			b.WriteString("\n")
		}
		if pooling != "none" && len(texts) > 1 {
			b.WriteString("\ncosine similarity matrix:\n\n")
			for _, label := range []string{"hello ", "naïve", "     a"} { // %6.6s: six bytes, ï two of them
				b.WriteString(label + " ")
			}
			b.WriteString("\n")
			for i := range vecs {
				for j := range vecs {
					fmt.Fprintf(&b, "%6.2f ", embed.SimilarityCos(vecs[i], vecs[j]))
				}
				b.WriteString([]string{"hello worl", "naïve caf", "a"}[i] + "\n") // %1.10s: ten bytes
			}
		}
		b.WriteString("\n")
		return b.String()
	}
	matrix := func(vecs [][]float32) string {
		var rows []string
		for i := range vecs {
			var cells []string
			for j := range vecs {
				cells = append(cells, fmt.Sprintf("%.2f", embed.SimilarityCos(vecs[i], vecs[j])))
			}
			rows = append(rows, "["+strings.Join(cells, ",")+"]")
		}
		return `,"cosineSimilarity":[` + strings.Join(rows, ",") + "]}\n"
	}
	for _, tc := range []struct {
		name    string
		texts   []string
		pooling string
		norm    int
		format  string
	}{
		{name: "several texts print their first 16 values and the cosine similarity matrix", texts: several, pooling: "mean", norm: 2},
		{name: "one text prints every value and no matrix", texts: several[:1], pooling: "mean", norm: 2},
		{name: "--embd-normalize 0 prints the values as %6.0f, the matrix as ever", texts: several, pooling: "cls", norm: 0},
		{name: "pooling none prints each token row's first and last three values and no matrix", texts: several[:2], pooling: "none", norm: 2},
		{name: "json+ of several texts adds the cosine similarity matrix to json", texts: several, pooling: "mean", norm: 2, format: "json+"},
		{name: "json+ of one text is json", texts: several[:1], pooling: "mean", norm: 2, format: "json+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{model, "-t", "1", "-p", strings.Join(tc.texts, "\n"), "--pooling", tc.pooling, "--embd-normalize", fmt.Sprint(tc.norm)}
			vecs := embedArray(t, args...)
			var want string
			if tc.format == "" {
				want = text(vecs, tc.texts, tc.pooling, tc.norm)
			} else {
				_, js, _ := runCLI(append(append([]string{"embed"}, args...), "--embd-output-format", "json")...)
				want = js
				if len(tc.texts) > 1 {
					want = strings.TrimSuffix(js, "}\n") + matrix(vecs)
				}
				args = append(args, "--embd-output-format", tc.format)
			}
			code, stdout, stderr := runCLI(append([]string{"embed"}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d, %s", code, stderr)
			}
			if stdout != want {
				t.Fatalf("stdout\n%q\nwant\n%q", stdout, want)
			}
		})
	}
}

// TestEmbedSplitsRankTextsOnClsSeparator: with --pooling rank, a text holding --cls-separator (llama-embedding's,
// default a tab) is split into a query and a document joined by the vocabulary's EOS and SEP text (a bert
// reranker: [SEP]) and scored as the pair (compared unnormalized, --embd-normalize -1); the separator is any
// string; an empty one is refused. -p's escapes are
// processed first (llama-embedding's -e, on by default), so -p 'query\tdocument' holds a tab.
func TestEmbedSplitsRankTextsOnClsSeparator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rerank.gguf")
	if code, _, stderr := runCLI("synth", path, "--arch", "bert", "--preset", "tiny", "--type", "q8_0", "--pooling", "rank", "--classifier", "1",
		"--vocab", testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	pair := embedArray(t, path, "-t", "1", "--embd-normalize", "-1", "-p", "what is a panda?[SEP]pandas eat bamboo")
	whole := embedArray(t, path, "-t", "1", "--embd-normalize", "-1", "-p", "what is a panda? pandas eat bamboo")
	if fmt.Sprint(pair) == fmt.Sprint(whole) {
		t.Fatalf("the pair and the whole text score alike (%v): the test cannot tell them apart", pair)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    [][]float32
		notWant [][]float32 // when want is nil
		code    int
		stderr  string
	}{
		{name: "a tab splits the query from the document by default", args: []string{"-p", "what is a panda?\tpandas eat bamboo"}, want: pair},
		{name: "-p's escape \\t is a tab, as llama-embedding's -e (on by default) makes it", args: []string{"-p", `what is a panda?\tpandas eat bamboo`}, want: pair},
		{name: "--no-escape keeps -p's \\t as it is: no tab, the text scored whole", args: []string{"-p", `what is a panda?\tpandas eat bamboo`, "--no-escape"}, notWant: pair},
		{name: "--cls-separator sets another separator", args: []string{"-p", "what is a panda?<#seq#>pandas eat bamboo", "--cls-separator", "<#seq#>"}, want: pair},
		{name: "a text without the separator is scored whole", args: []string{"-p", "what is a panda? pandas eat bamboo", "--cls-separator", "<#seq#>"}, want: whole},
		{name: "an empty --cls-separator is refused naming it", args: []string{"-p", "x\ty", "--cls-separator", ""}, code: 1,
			stderr: `bankml: embed: --cls-separator "" is empty: with --pooling rank a text is split on it; give a non-empty separator (the default is a tab)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code != 0 {
				code, _, stderr := runCLI(append([]string{"embed", path, "-t", "1"}, tc.args...)...)
				if code != tc.code || !strings.Contains(stderr, tc.stderr) {
					t.Fatalf("exit %d, %s; want %d with %q", code, stderr, tc.code, tc.stderr)
				}
				return
			}
			got := embedArray(t, append([]string{path, "-t", "1", "--embd-normalize", "-1"}, tc.args...)...)
			if tc.want != nil && fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("scores %v, want %v", got, tc.want)
			}
			if tc.notWant != nil && fmt.Sprint(got) == fmt.Sprint(tc.notWant) {
				t.Fatalf("scores %v, the pair's: the text was split", got)
			}
		})
	}
}

// TestEmbedRankPairsScoreAsTheReference: a bert reranker's score of "query<TAB>document" under --pooling rank
// is, bit for bit, the reference's rank-pooled value of the tokens llama-embedding makes of it (compared
// unnormalized, --embd-normalize -1, as llama.cpp's ci/run.sh runs its reranker): the parts joined by "[SEP]" (the vocabulary adds SEP, not EOS), tokenized with special tokens added and parsed.
func TestEmbedRankPairsScoreAsTheReference(t *testing.T) {
	lib := reftest.Lib(t)
	path := filepath.Join(t.TempDir(), "rerank.gguf")
	if code, _, stderr := runCLI("synth", path, "--arch", "bert", "--preset", "tiny", "--type", "q8_0", "--pooling", "rank", "--classifier", "1",
		"--vocab", testdata.Model(t, "vocab/ggml-vocab-bert-bge.gguf")); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	query := "what is a panda?"
	docs := []string{"hi", "The giant panda is a bear species endemic to China.", "a"}
	var texts []string
	for _, d := range docs {
		texts = append(texts, query+"\t"+d)
	}
	got := embedArray(t, path, "-t", "1", "--embd-normalize", "-1", "-p", strings.Join(texts, "\n"))
	for i, d := range docs {
		toks, err := rm.Tokenize(query+"[SEP]"+d, true, true)
		if err != nil {
			t.Fatal(err)
		}
		e, err := rm.Embed(toks, reference.PoolingRank, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[i]) == 0 || math.Float32bits(got[i][0]) != math.Float32bits(e.Pooled[0]) {
			t.Errorf("document %d: score %v, reference %v", i, got[i], e.Pooled[0])
		}
	}
}
