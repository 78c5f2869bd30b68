package synth

import (
	"errors"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestMetadataIsAppendedOnce: Config.Metadata keys follow the planned ones,
// in order, and a key that synth already plans is refused.
func TestMetadataIsAppendedOnce(t *testing.T) {
	shape, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	extra := []gguf.KV{
		{Key: "qwen3.rope.scaling.type", Value: gguf.StringValue("yarn")},
		{Key: "qwen3.rope.scaling.factor", Value: gguf.Float32Value(4)},
	}
	cfg := Config{Arch: ArchQwen3, Shape: shape, Weight: gguf.Q2_0, Metadata: extra}
	kvs, _, err := Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) < 2 || kvs[len(kvs)-2].Key != extra[0].Key || kvs[len(kvs)-1].Key != extra[1].Key {
		t.Errorf("the metadata keys are not last: %v", kvs[len(kvs)-2:])
	}
	base, _, err := Plan(Config{Arch: ArchQwen3, Shape: shape, Weight: gguf.Q2_0})
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != len(base)+2 {
		t.Errorf("%d keys with 2 extra, %d without", len(kvs), len(base))
	}
	cfg.Metadata = []gguf.KV{{Key: "qwen3.block_count", Value: gguf.Uint32Value(3)}}
	if _, _, err := Plan(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("a planned key set again: %v, want ErrConfig", err)
	}
}
