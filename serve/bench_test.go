package serve

import (
	"context"
	"testing"

	"github.com/bankml/bankml/engine"
)

// BenchmarkOverhead times one greedy 16-token completion on stories260K through the HTTP layer (decode,
// receipt, JSON) and through engine.Generate alone, one after the other in one process, to show what serving costs.
func BenchmarkOverhead(b *testing.B) {
	ts := newTestServer(b, storiesPath(b), AdmitOptions{}, Options{})
	body := []byte(`{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0, "cache_prompt": false}`)
	call, err := ts.decodeOAI(body, kindText)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			if st, out := ts.post(b, "/v1/completions", body); st != 200 {
				b.Fatalf("%d %s", st, out)
			}
		}
	})
	b.Run("engine", func(b *testing.B) {
		for b.Loop() {
			if _, err := ts.eng.Generate(context.Background(), call.req, func(engine.Token) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
