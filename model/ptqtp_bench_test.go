package model

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/sample"
)

// BenchmarkDecodePTQTP compares the decode speed of PTQTP files with their
// TQ2_0 counterpart side by side: the files of $BANKML_BENCH_PTQTP (a
// comma-separated list; default the bonsai-1.7b-shaped /tmp/b17-TQ2_0.gguf,
// /tmp/b17-PTQTP2.gguf and /tmp/b17-PTQTP3.gguf, made with bankml synth
// --preset bonsai-1.7b --type f16 and bankml quantize, see docs/TERNARY.md)
// are all loaded, then each iteration decodes, for every file in turn, an
// 8-token prompt and 16 tokens greedily on $BANKML_BENCH_THREADS threads
// (default 2). Reported: each file's median decode tok/s and its ratio to the
// first file's.
//
//	go test -run '^$' -bench DecodePTQTP -benchtime 3x ./model/
func BenchmarkDecodePTQTP(b *testing.B) {
	paths := []string{"/tmp/b17-TQ2_0.gguf", "/tmp/b17-PTQTP2.gguf", "/tmp/b17-PTQTP3.gguf"}
	if s := os.Getenv("BANKML_BENCH_PTQTP"); s != "" {
		paths = strings.Split(s, ",")
	}
	threads := 2
	if s := os.Getenv("BANKML_BENCH_THREADS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			threads = n
		}
	}
	var models []*Model
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%v (see docs/TERNARY.md for the commands that make it)", err)
		}
		f, err := gguf.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		m, err := Load(f)
		if err != nil {
			b.Fatal(err)
		}
		models = append(models, m)
	}
	prompt := make([]int32, 8)
	for i := range prompt {
		prompt[i] = int32(100 + i*4099)
	}
	const gen = 16
	rates := make([][]float64, len(models))
	for b.Loop() {
		for i, m := range models {
			c, err := m.NewContext(len(prompt)+gen, threads)
			if err != nil {
				b.Fatal(err)
			}
			logits, err := c.Decode(prompt)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			for range gen {
				if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
					b.Fatal(err)
				}
			}
			rates[i] = append(rates[i], gen/time.Since(t0).Seconds())
			c.Close()
		}
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	base := med(rates[0])
	for i, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		r := med(rates[i])
		b.ReportMetric(r, name+"-decode-tok/s")
		if i > 0 {
			b.ReportMetric(r/base, name+"/"+strings.TrimSuffix(filepath.Base(paths[0]), ".gguf"))
		}
	}
}
