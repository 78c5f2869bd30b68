package serve

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/format"
	ollamamodel "github.com/ollama/ollama/types/model"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
)

// ollamaModel are the facts Ollama's model listings report about the one
// model bankml serves.
type ollamaModel struct {
	Name     string     // the served name (the first -a/--alias, else the file's base name), listed
	Names    []string   // the names a request's "model" may give (with or without ":latest"): the file's base name and every alias
	Path     string     // the GGUF file
	Size     int64      // bytes
	ModTime  time.Time  // the file's modification time
	SHA256   string     // the file's digest, lower-case hex
	File     *gguf.File // its metadata and tensor infos
	Template string     // the chat template's source
	Loaded   time.Time  // when the server loaded it

	// HasTemplate says the file has its own chat template: /api/generate
	// then renders its prompt as a user message, else it sends the prompt as
	// is (Ollama's "{{ .Prompt }}" for a model without one).
	HasTemplate bool
}

// ollamaFileTypes are the names Ollama gives llama.cpp's general.file_type
// values (enum llama_ftype in llama.h, without LLAMA_FTYPE_MOSTLY_). 0
// (LLAMA_FTYPE_ALL_F32, llama.cpp's "all F32") is not among them: Ollama's
// fs/ggml KV.FileType takes only a value above 0, and reads 0 as it reads
// an absent key, FileTypeUnknown ("unknown").
var ollamaFileTypes = map[uint64]string{
	1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
	12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
	19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
	26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
	36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}

// details is the model's Details.
func (m ollamaModel) details() api.ModelDetails { return Details(m.File) }

// Details is Ollama's api.ModelDetails of a model file, from its header alone: format "gguf", the
// architecture as family, the parameter count as Ollama prints it (format.HumanNumber of the tensors'
// elements), the file type's name (QuantizationLevel). With f nil only the format is known (quantization
// level "unknown"). The single-model server and the store server (package storeserve) answer /api/tags,
// /api/ps and /api/show with it.
func Details(f *gguf.File) api.ModelDetails {
	d := api.ModelDetails{Format: "gguf", QuantizationLevel: "unknown"}
	if f == nil {
		return d
	}
	if arch := f.Architecture(); arch != "" {
		d.Family, d.Families = arch, []string{arch}
	}
	var n uint64
	for i := range f.Tensors {
		n += uint64(f.Tensors[i].NElements())
	}
	d.ParameterSize = format.HumanNumber(n)
	d.QuantizationLevel = QuantizationLevel(f)
	return d
}

// QuantizationLevel is the name Ollama gives the file's general.file_type
// (its details.quantization_level, the quantization row of `ollama run`'s
// /show info): llama.h's llama_ftype name ("Q4_K_M", "TQ1_0", ...), or
// "unknown" when f is nil, the key is absent, 0 (all F32: Ollama reads 0 as
// no file type) or not one llama.h names.
func QuantizationLevel(f *gguf.File) string {
	if f != nil {
		if ft, ok := f.GetUint64("general.file_type"); ok {
			if name, ok := ollamaFileTypes[ft]; ok {
				return name
			}
		}
	}
	return "unknown"
}

// handleTags is GET (and HEAD) /api/tags: the one model.
func (a *ollamaAPI) handleTags(w http.ResponseWriter, r *http.Request) {
	m := a.model
	writeOllamaJSON(w, http.StatusOK, api.ListResponse{Models: []api.ListModelResponse{{
		Name: m.tagged(), Model: m.tagged(), ModifiedAt: m.ModTime, Size: m.Size, Digest: m.SHA256,
		Details: m.details(),
	}}})
}

// handlePs is GET /api/ps: the model, loaded for the server's lifetime
// (expires_at as Ollama reports a keep_alive of -1: the loading time plus
// the longest duration), its context per slot, no VRAM.
func (a *ollamaAPI) handlePs(w http.ResponseWriter, r *http.Request) {
	m := a.model
	writeOllamaJSON(w, http.StatusOK, api.ProcessResponse{Models: []api.ProcessModelResponse{{
		Name: m.tagged(), Model: m.tagged(), Size: m.Size, Digest: m.SHA256, Details: m.details(),
		ExpiresAt: m.Loaded.Add(math.MaxInt64), ContextLength: a.s.ContextLength(),
	}}})
}

// handleShow is POST /api/show: the file's ShowFacts (details, model_info,
// tensors, the chat template's source, capabilities), a Modelfile naming the
// file, the request's system.
func (a *ollamaAPI) handleShow(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if _, ok := a.decode(w, r, &req); !ok {
		return
	}
	if req.Model == "" {
		req.Model = req.Name //lint:ignore SA1019 older Ollama clients send "name"; Ollama's ShowHandler takes it too
	}
	if !a.modelName(w, req.Model) {
		return
	}
	m := a.model
	resp := ShowFacts(m.File, a.s.m.Template, req.Verbose)
	resp.Modelfile = fmt.Sprintf("# Modelfile generated by bankml serve\nFROM %s\n", m.Path)
	resp.System = req.System
	resp.ModifiedAt = m.ModTime
	writeOllamaJSON(w, http.StatusOK, resp)
}

// ShowFacts are the parts of Ollama's /api/show answer a model file gives, from its header and chat template
// alone (no weights loaded): details (Details), the GGUF metadata as model_info (general.name and
// tokenizer.chat_template left out, arrays null unless verbose, as Ollama gives them; an empty object when f
// is nil), the tensors, the chat template's source (Jinja, where Ollama shows its Go template) and the
// capabilities (Capabilities). The single-model server and the store server (package storeserve) add the
// modelfile, system, license, parameters, messages and modified_at.
func ShowFacts(f *gguf.File, t *chat.Template, verbose bool) api.ShowResponse {
	resp := api.ShowResponse{
		Details:      Details(f),
		ModelInfo:    map[string]any{},
		Capabilities: Capabilities(t),
	}
	if t != nil {
		resp.Template = t.Source()
	}
	if f == nil {
		return resp
	}
	for _, kv := range f.KVs {
		if kv.Key == "general.name" || kv.Key == "tokenizer.chat_template" {
			continue
		}
		resp.ModelInfo[kv.Key] = ggufJSON(kv.Value, verbose)
	}
	for _, t := range f.Tensors {
		shape := make([]uint64, len(t.Ne))
		for i, n := range t.Ne {
			shape[i] = uint64(n)
		}
		resp.Tensors = append(resp.Tensors, api.Tensor{Name: t.Name, Type: t.Type.String(), Shape: shape})
	}
	return resp
}

// ggufJSON is a metadata value as JSON: numbers of their width (f32 as
// float32, so that it prints as Ollama prints it; NaN and infinities as the
// strings "NaN", "+Inf", "-Inf"), strings, bools, arrays element by element
// when full, else nil.
func ggufJSON(v gguf.Value, full bool) any {
	switch v.Type {
	case gguf.String:
		s, _ := v.String()
		return s
	case gguf.Bool:
		b, _ := v.Bool()
		return b
	case gguf.Float32, gguf.Float64:
		f, _ := v.Float64()
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0): // JSON has no such numbers: as package inspect writes them
			return map[bool]string{true: "NaN", false: strconv.FormatFloat(f, 'g', -1, 64)}[math.IsNaN(f)]
		case v.Type == gguf.Float32:
			return float32(f)
		}
		return f
	case gguf.Uint8, gguf.Uint16, gguf.Uint32, gguf.Uint64:
		u, _ := v.Uint64()
		return u
	case gguf.Int8, gguf.Int16, gguf.Int32, gguf.Int64:
		i, _ := v.Int64()
		return i
	case gguf.TypeArray:
		if !full {
			return nil
		}
		a, _ := v.Array()
		vals := a.Values()
		out := make([]any, len(vals))
		for i, e := range vals {
			out[i] = ggufJSON(e, true)
		}
		return out
	}
	return nil
}

// Capabilities are a model's Ollama capabilities as its chat template t has them: completion, tools when the
// template renders tool calls and bankml parses them (chat.Template.SupportsTools), thinking when it shows
// reasoning between markers (chat.Template.SupportsThinking), as Ollama derives them from a model's template.
// With t nil: completion.
func Capabilities(t *chat.Template) []ollamamodel.Capability {
	caps := []ollamamodel.Capability{ollamamodel.CapabilityCompletion}
	if t != nil {
		if t.SupportsTools() {
			caps = append(caps, ollamamodel.CapabilityTools)
		}
		if t.SupportsThinking() {
			caps = append(caps, ollamamodel.CapabilityThinking)
		}
	}
	return caps
}
