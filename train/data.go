package train

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
)

// SampleOptions say how the training set is drawn from the teacher.
type SampleOptions struct {
	Stories   int     // stories to draw
	MaxTokens int     // tokens per story at most (n_predict)
	Seed      uint32  // story i is drawn with the sampler seed Seed+i
	Temp      float32 // the sampling temperature (1: the teacher's own distribution)
	Workers   int     // stories drawn at once (the engine's slots); the stories do not depend on it
	TopK      int     // the teacher's most likely next tokens kept per position as soft targets (llama-server's n_probs)
}

// Story is one sampled story: its tokens (BOS first) and, for each position but the last, the teacher's TopK
// most likely next tokens with their probabilities (Soft.ID −1 where the teacher gave fewer).
type Story struct {
	Tokens []int32
	ID     []int32
	P      []float32
}

// SampleStories draws o.Stories stories from the teacher through eng (package engine: its slots, its sampler
// chain; no decode loop of this package's own): each the continuation of the prompt [bos] under the seeded sampler
// at temperature o.Temp with every truncation off (top-k 0, top-p 1, min-p 0), an end-of-generation token
// dropped. The soft targets come with the draw: each generated token's n_probs list (sample.TokenProbs: the
// softmax of the teacher's raw logits at that step, its o.TopK most likely tokens), so the teacher's
// distribution costs no second evaluation. Story i is a pure function of the teacher, bos, o.MaxTokens, o.Temp,
// o.TopK and o.Seed+i. progress (may be nil) is called with the number of stories and tokens done, from one
// goroutine at a time.
func SampleStories(ctx context.Context, eng *engine.Engine, bos int32, eogs []int32, o SampleOptions, progress func(done, tokens int)) ([]Story, error) {
	if o.Stories < 1 || o.MaxTokens < 1 || o.Workers < 1 || !(o.Temp > 0) || o.TopK < 1 {
		return nil, fmt.Errorf("train: sample %d stories of at most %d tokens on %d workers at temperature %g: want positive values", o.Stories, o.MaxTokens, o.Workers, o.Temp)
	}
	isEOG := map[int32]bool{}
	for _, t := range eogs {
		isEOG[t] = true
	}
	stories := make([]Story, o.Stories)
	var (
		mu         sync.Mutex
		next, done int
		tokens     int
		firstErr   error
		wg         sync.WaitGroup
		ctx2, stop = context.WithCancel(ctx)
	)
	defer stop()
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= o.Stories || ctx2.Err() != nil {
					return
				}
				p := sample.DefaultParams()
				p.Seed, p.Temp, p.TopK, p.TopP, p.MinP, p.NProbs = o.Seed+uint32(i), o.Temp, 0, 1, 0, int32(o.TopK)
				st := Story{Tokens: []int32{bos}}
				res, err := eng.Generate(ctx2, engine.Request{Prompt: engine.Prompt{Tokens: []int32{bos}}, Sampling: p, NPredict: o.MaxTokens, Slot: -1},
					func(tk engine.Token) error {
						st.Tokens = append(st.Tokens, tk.ID)
						for k := range o.TopK {
							id, pr := int32(-1), float32(0)
							if tk.Probs != nil && k < len(tk.Probs.Top) {
								id, pr = tk.Probs.Top[k].ID, tk.Probs.Top[k].P
							}
							st.ID, st.P = append(st.ID, id), append(st.P, pr)
						}
						return nil
					})
				if err == nil && len(st.Tokens) != len(res.Tokens)+1 {
					err = fmt.Errorf("%d tokens streamed, %d generated", len(st.Tokens)-1, len(res.Tokens))
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("train: story %d: %w", i, err)
					}
					mu.Unlock()
					stop()
					return
				}
				if n := len(st.Tokens); n > 1 && isEOG[st.Tokens[n-1]] {
					st.Tokens = st.Tokens[:n-1]
				}
				// positions 0..n-2 have a next token in the story; the last one's list (after the final token)
				// was never drawn from
				st.ID, st.P = st.ID[:(len(st.Tokens)-1)*o.TopK], st.P[:(len(st.Tokens)-1)*o.TopK]
				mu.Lock()
				stories[i] = st
				done++
				tokens += len(st.Tokens)
				if progress != nil {
					progress(done, tokens)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return stories, nil
}

// HeldOutFilter drops every story that shares a run of span consecutive tokens with heldout (the text perplexity
// is measured on), so that no held-out passage is in the training set even by chance. It returns the stories kept
// and the number dropped.
func HeldOutFilter(stories []Story, heldout []int32, span int) (kept []Story, dropped int) {
	key := func(s []int32) string {
		b := make([]byte, 4*len(s))
		for i, t := range s {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(t))
		}
		return string(b)
	}
	seen := map[string]bool{}
	for i := 0; i+span <= len(heldout); i++ {
		seen[key(heldout[i:i+span])] = true
	}
	for _, s := range stories {
		hit := false
		for i := 0; i+span <= len(s.Tokens) && !hit; i++ {
			hit = seen[key(s.Tokens[i:i+span])]
		}
		if hit {
			dropped++
			continue
		}
		kept = append(kept, s)
	}
	return kept, dropped
}

// Data is a training stream: stories one after another, and the soft targets of every position (the teacher's
// next-token list; a story's last position, whose next token is the following story's BOS, has none).
type Data struct {
	Tokens []int32
	Soft   Soft
}

// Stream joins stories into one Data.
func Stream(stories []Story, k int) *Data {
	d := &Data{Soft: Soft{K: k}}
	for _, s := range stories {
		d.Tokens = append(d.Tokens, s.Tokens...)
		d.Soft.ID = append(d.Soft.ID, s.ID...)
		d.Soft.P = append(d.Soft.P, s.P...)
		for range k {
			d.Soft.ID, d.Soft.P = append(d.Soft.ID, -1), append(d.Soft.P, 0)
		}
	}
	return d
}

// dataMagic opens a data file: "BMLTOK2\n", little-endian uint64 n and uint32 K, then n tokens, n·K soft ids
// (all uint32, −1 as 0xffffffff) and n·K probabilities (float32).
const dataMagic = "BMLTOK2\n"

// WriteData writes d to path.
func WriteData(path string, d *Data) error {
	n := len(d.Tokens)
	b := make([]byte, 0, len(dataMagic)+12+4*n+8*n*d.Soft.K)
	b = append(b, dataMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(d.Soft.K))
	for _, t := range d.Tokens {
		b = binary.LittleEndian.AppendUint32(b, uint32(t))
	}
	for _, t := range d.Soft.ID {
		b = binary.LittleEndian.AppendUint32(b, uint32(t))
	}
	for _, p := range d.Soft.P {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p))
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadData reads a file of WriteData.
func ReadData(path string) (*Data, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h := len(dataMagic) + 12
	if len(b) < h || string(b[:len(dataMagic)]) != dataMagic {
		return nil, fmt.Errorf("train: %s is not a training data file (want the %q header)", path, dataMagic[:7])
	}
	n := binary.LittleEndian.Uint64(b[len(dataMagic):])
	k := uint64(binary.LittleEndian.Uint32(b[len(dataMagic)+8:]))
	body := b[h:]
	if n > 1<<40 || k > 1<<16 || uint64(len(body)) != 4*n+8*n*k {
		return nil, fmt.Errorf("train: %s: %w: %d tokens and %d soft targets each announced, %d bytes follow", path, io.ErrUnexpectedEOF, n, k, len(body))
	}
	d := &Data{Tokens: make([]int32, n), Soft: Soft{K: int(k), ID: make([]int32, n*k), P: make([]float32, n*k)}}
	u := func(i uint64) uint32 { return binary.LittleEndian.Uint32(body[4*i:]) }
	for i := range n {
		d.Tokens[i] = int32(u(i))
	}
	for i := range n * k {
		d.Soft.ID[i] = int32(u(n + i))
		d.Soft.P[i] = math.Float32frombits(u(n + n*k + i))
	}
	return d, nil
}
