package main

import (
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
)

// cacheType is -ctk/--cache-type-k or -ctv/--cache-type-v: a KV cache data type by ggml name, as llama.cpp's
// kv_cache_type_from_str (common/arg.cpp) reads it; model.ParseCacheType refuses the types bankml does not
// run, naming the allowed ones (f16, q8_0, q4_0), and the refusal names the flag as llama.cpp spells it too
// (-ctk/--cache-type-k).
type cacheType gguf.GGMLType

// cacheTypeFlag is the flag named name (kong's, "cache-type-k") in its short and long spellings.
func cacheTypeFlag(name string) string {
	switch name {
	case "cache-type-k":
		return "-ctk/--cache-type-k"
	case "cache-type-v":
		return "-ctv/--cache-type-v"
	}
	return "--" + name
}

// Decode implements kong.MapperValue.
func (c *cacheType) Decode(ctx *kong.DecodeContext) error {
	s, err := popString(ctx, "cache type")
	if err != nil {
		return err
	}
	t, err := model.ParseCacheType(s)
	if err != nil {
		return fmt.Errorf("%s: %w", cacheTypeFlag(ctx.Value.Name), err)
	}
	*c = cacheType(t)
	return nil
}

// cacheTypeFlags are the KV cache types of run and serve (llama.cpp's -ctk and -ctv).
type cacheTypeFlags struct {
	CacheTypeK cacheType `name:"cache-type-k" default:"f16" placeholder:"TYPE" help:"KV cache data type for K, as llama.cpp's -ctk/--cache-type-k: f16 (default), q8_0 or q4_0 (llama.cpp's other types are refused). A quantized K cache rotates Q and K by llama.cpp's Hadamard matrices (head size a multiple of 64) and needs a head size its block size (32) divides."`
	CacheTypeV cacheType `name:"cache-type-v" default:"f16" placeholder:"TYPE" help:"KV cache data type for V, as llama.cpp's -ctv/--cache-type-v: f16 (default), q8_0 or q4_0, with the same rules (bankml always runs flash attention, which llama.cpp requires for a quantized V cache: -fa off beside a quantized V type is refused, as llama.cpp refuses it)."`
}

func (f cacheTypeFlags) types() model.CacheTypes {
	return model.CacheTypes{K: gguf.GGMLType(f.CacheTypeK), V: gguf.GGMLType(f.CacheTypeV)}
}
