package model

import (
	"math"
	"path/filepath"
	"testing"
)

// TestIntermediatesMatchReference compares every named intermediate result of
// the forward pass (attn_norm, Qcur and Kcur after RoPE, Vcur, kqv_out,
// attn_out, ffn_*, l_out per layer, result_norm) with the tensor of the same
// name that the reference's graph computes, bit for bit. It localises any
// future divergence to one op of one layer.
func TestIntermediatesMatchReference(t *testing.T) {
	dir := modelsDir(t)
	lib := refLib(t)
	for _, name := range oracleFiles {
		path := filepath.Join(dir, name)
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		m := loadModel(t, path)
		for _, text := range []string{"Once upon a time", longText(6)} {
			toks, err := rm.Tokenize(text, true, false)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := rm.Trace(toks, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref := map[string][]float32{}
			for _, x := range ts {
				ref[x.Name] = x.Data // the last node of that name: after RoPE for Qcur/Kcur
			}
			c := newCtx(t, m, len(toks), 1)
			compared := 0
			c.trace = func(tn string, got []float32) {
				want, ok := ref[tn]
				if !ok {
					t.Errorf("%s: the reference has no tensor %q", name, tn)
					return
				}
				if len(want) != len(got) {
					t.Errorf("%s %d tokens: %s has %d values, reference %d", name, len(toks), tn, len(got), len(want))
					return
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s %d tokens: %s[%d] = %g, reference %g", name, len(toks), tn, i, got[i], want[i])
						return
					}
				}
				compared++
			}
			if _, err := c.Decode(toks); err != nil {
				t.Fatal(err)
			}
			if compared < 10*m.HP.NLayer {
				t.Errorf("%s: only %d tensors compared", name, compared)
			}
		}
		rm.Close()
	}
}
