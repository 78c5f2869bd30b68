package sample

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestMetaStringMatchesReference: every non-array metadata value of both
// oracle models, as MetaString renders it, is the string the reference's
// llama_model_meta_val_str returns (what llama.cpp parses sampling defaults
// from), and arrays are absent in both.
func TestMetaStringMatchesReference(t *testing.T) {
	n, same := 0, 0
	for _, om := range oracleModels(t) {
		f, err := gguf.Open(om.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range f.KVs {
			ours, ok := MetaString(kv.Value)
			ref, rok, err := om.m.MetaValStr(kv.Key)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if ok != rok || ours != ref {
				t.Errorf("%s: %s: %q (%v), reference %q (%v)", om.name, kv.Key, trunc(ours), ok, trunc(ref), rok)
				continue
			}
			same++
		}
		f.Close()
	}
	t.Logf("metadata strings: %d of %d identical to llama_model_meta_val_str", same, n)
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// TestModelDefaultsFollowCommonInit: general.sampling.* values override the
// defaults after the string round trip llama.cpp does (a float through
// std::to_string's six decimals and strtof), unparsable values are ignored,
// and the sequence's unknown names are reported.
func TestModelDefaultsFollowCommonInit(t *testing.T) {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue("llama")},
		{Key: KeySamplingSequence, Value: gguf.StringValue("top_k;min-p;bogus;temperature")},
		{Key: "general.sampling.top_k", Value: gguf.Int32Value(20)},
		{Key: "general.sampling.top_p", Value: gguf.Float32Value(0.1234567)},
		{Key: "general.sampling.temp", Value: gguf.Float64Value(0.6)},
		{Key: "general.sampling.min_p", Value: gguf.StringValue("  0.25xyz")},
		{Key: "general.sampling.penalty_repeat", Value: gguf.StringValue("high")},
		{Key: "general.sampling.penalty_last_n", Value: gguf.Uint32Value(1<<32 - 1)},
		{Key: "general.sampling.xtc_threshold", Value: gguf.BoolValue(true)},
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kvs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	unknown := ApplyModelDefaults(&p, f)
	want := DefaultParams()
	want.Samplers = []Type{TopK, MinP, Temperature}
	want.TopK, want.TopP, want.Temp, want.MinP = 20, 0.123457, 0.6, 0.25
	want.PenaltyLastN = -1 // "4294967295" through strtol, then to int32_t
	if !reflect.DeepEqual(p, want) || !reflect.DeepEqual(unknown, []string{"bogus"}) {
		t.Errorf("got %+v (unknown %q)\nwant %+v", p, unknown, want)
	}
}
