package serve

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/bankml/bankml/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is a /metrics registry (no global state). The names are llama-server's /metrics names
// (server_task_result_metrics::to_metrics) where bankml measures the same quantity; bankml's own are under the
// bankml: prefix. A Server makes one of its own, without labels, unless Options.Metrics gives it one to share:
// a registry from NewMetrics serves the series of every Server given it under a model label (the Server's
// name), as the store server (package storeserve) serves its models. A model's counters outlive its Server,
// so that they never go back when the model is loaded again; llamacpp:requests_processing,
// llamacpp:requests_deferred and bankml:ledger_size are read from the Servers open now.
//
// The prompt series count when the engine evaluates the prompt, as llama-server's update_slots does
// (engine.Options.OnDecode): llamacpp:prompt_tokens_cached_total when a prompt starts (add_prompt_cached),
// llamacpp:prompt_tokens_total and llamacpp:prompt_seconds_total after each forward pass over prompt tokens,
// and llamacpp:n_tokens_max, llamacpp:n_decode_total and llamacpp:n_busy_slots_per_decode after each forward
// pass of requests' work (metrics_post_decode), whatever becomes of the request afterwards; the generation's
// series when a request that generated tokens gives its slot back, however it ended (engine.Options.
// OnPrediction; metrics_on_prediction at the slot's reset). llamacpp:prompt_tokens_seconds and
// llamacpp:predicted_tokens_seconds are throughputs over what was counted since the last scrape
// (server_metrics' prompt_bucket and predict_bucket, which every GET /metrics resets after rendering them).
type Metrics struct {
	reg     *prometheus.Registry
	byModel bool

	promptTokens  *prometheus.CounterVec // llamacpp:prompt_tokens_total (excluding cached tokens)
	promptCached  *prometheus.CounterVec // llamacpp:prompt_tokens_cached_total
	promptSeconds *prometheus.CounterVec // llamacpp:prompt_seconds_total
	predicted     *prometheus.CounterVec // llamacpp:tokens_predicted_total
	predictedSecs *prometheus.CounterVec // llamacpp:tokens_predicted_seconds_total
	nTokensMax    *prometheus.GaugeVec   // llamacpp:n_tokens_max
	requests      *prometheus.CounterVec // bankml:http_requests_total{route,code}
	refused       *prometheus.CounterVec // bankml:requests_refused_total{reason}

	mu      sync.Mutex            // guards servers, maxSeen and totals
	servers map[*metrics]struct{} // the Servers open now (live gauges)
	maxSeen map[string]float64    // llamacpp:n_tokens_max by model
	totals  map[string]*decodes   // the decode counts and throughput buckets by model
}

// decodes are a model's counts of server_metrics that bankml reports through a collector of its own
// (decodeGauges): n_decode, n_busy_slots, and the prompt and predict buckets since the last scrape.
type decodes struct {
	n, busySlots    uint64
	prompt, predict bucket
}

// bucket is server_metrics::bucket (tools/server/server-common.h): decode steps and the time they took.
type bucket struct {
	steps, seconds float64
}

// perSecond is bucket::n_per_second: steps per second, 0 without time.
func (b bucket) perSecond() float64 {
	if b.seconds <= 0 {
		return 0
	}
	return b.steps / b.seconds
}

// NewMetrics is a registry to share among the Servers of several models (Options.Metrics): every series
// carries a model label, the Server's name.
func NewMetrics() *Metrics { return newRegistry(true) }

func newRegistry(byModel bool) *Metrics {
	var model []string
	if byModel {
		model = []string{"model"}
	}
	with := func(more ...string) []string { return append(append([]string(nil), model...), more...) }
	m := &Metrics{reg: prometheus.NewRegistry(), byModel: byModel, servers: map[*metrics]struct{}{}, maxSeen: map[string]float64{},
		totals: map[string]*decodes{}}
	c := func(name, help string, labels []string) *prometheus.CounterVec {
		x := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(x)
		return x
	}
	m.promptTokens = c("llamacpp:prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", model)
	m.promptCached = c("llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", model)
	m.promptSeconds = c("llamacpp:prompt_seconds_total", "Total time spent processing prompts", model)
	m.predicted = c("llamacpp:tokens_predicted_total", "Number of generation tokens processed", model)
	m.predictedSecs = c("llamacpp:tokens_predicted_seconds_total", "Total time spent generating tokens", model)
	m.nTokensMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "llamacpp:n_tokens_max", Help: "Largest observed sequence length (prompt + generation)",
	}, model)
	m.reg.MustRegister(m.nTokensMax)
	m.requests = c("bankml:http_requests_total", "HTTP requests answered, by route pattern and status code", with("route", "code"))
	m.refused = c("bankml:requests_refused_total", "Requests refused before generation, by reason (queue_full, model_changed, context, invalid, origin, host)", with("reason"))
	m.reg.MustRegister(&liveGauges{m: m,
		processing: prometheus.NewDesc("llamacpp:requests_processing", "Number of requests processing", model, nil),
		deferred:   prometheus.NewDesc("llamacpp:requests_deferred", "Number of requests deferred", model, nil),
		ledger:     prometheus.NewDesc("bankml:ledger_size", "Entries in the history ledger", model, nil),
	})
	// server_task_result_metrics::to_metrics' names, help texts and types.
	m.reg.MustRegister(&decodeGauges{m: m,
		nDecode: prometheus.NewDesc("llamacpp:n_decode_total",
			"Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", model, nil),
		promptRate:  prometheus.NewDesc("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s", model, nil),
		predictRate: prometheus.NewDesc("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s", model, nil),
		busyPerDecode: prometheus.NewDesc("llamacpp:n_busy_slots_per_decode",
			"Average number of busy slots per llama_decode() call", model, nil),
	})
	return m
}

// label is the model label value of a Server named name (its name in a shared registry, "" in its own)
// and the label values its series take (none in its own registry).
func (m *Metrics) label(name string) (model string, lv []string) {
	if m.byModel {
		return name, []string{name}
	}
	return "", nil
}

// totalsOf is model's decodes, made on first use. The caller holds m.mu.
func (m *Metrics) totalsOf(model string) *decodes {
	d := m.totals[model]
	if d == nil {
		d = &decodes{}
		m.totals[model] = d
	}
	return d
}

// decodeHook is the engine.Options.OnDecode of a Server named name (tools/server/server-context.cpp):
// add_prompt_cached(n_past) when prompts start; after a forward pass, metrics_post_decode's n_decode++,
// n_busy_slots += the busy slots, n_tokens_max, and add_prompt of the pass's prompt tokens and time. Its
// series exist from now on, as llama-server reports them from its start.
func (m *Metrics) decodeHook(name string) func(engine.DecodeStats) {
	model, lv := m.label(name)
	promptTokens, promptCached := m.promptTokens.WithLabelValues(lv...), m.promptCached.WithLabelValues(lv...)
	promptSeconds, nTokensMax := m.promptSeconds.WithLabelValues(lv...), m.nTokensMax.WithLabelValues(lv...)
	m.mu.Lock()
	m.totalsOf(model)
	m.mu.Unlock()
	return func(st engine.DecodeStats) {
		promptCached.Add(float64(st.PromptCached))
		if !st.Decoded {
			return
		}
		seconds := st.PromptTime.Seconds()
		promptTokens.Add(float64(st.PromptTokens))
		promptSeconds.Add(seconds)
		m.mu.Lock()
		d := m.totalsOf(model)
		d.n++
		d.busySlots += uint64(st.BusySlots)
		d.prompt.steps += float64(st.PromptTokens)
		d.prompt.seconds += seconds
		if n := float64(st.MaxTokens); n > m.maxSeen[model] {
			m.maxSeen[model] = n
			nTokensMax.Set(n)
		}
		m.mu.Unlock()
	}
}

// predictionHook is the engine.Options.OnPrediction of a Server named name: metrics_on_prediction
// (tools/server/server-context.cpp), run when a request that generated tokens gives its slot back, however it
// ended: the tokens and the generation's time, and the predict bucket, whose steps exclude the first token
// (it came from the prompt's logits: server_slot_stats::n_gen_steps).
func (m *Metrics) predictionHook(name string) func(engine.Timings) {
	model, lv := m.label(name)
	predicted, predictedSecs := m.predicted.WithLabelValues(lv...), m.predictedSecs.WithLabelValues(lv...)
	return func(t engine.Timings) {
		predicted.Add(float64(t.PredictedN))
		predictedSecs.Add(t.PredictedMS / 1e3)
		m.mu.Lock()
		d := m.totalsOf(model)
		d.predict.steps += float64(max(t.PredictedN-1, 0))
		d.predict.seconds += t.PredictedMS / 1e3
		m.mu.Unlock()
	}
}

// Handler serves the registry in Prometheus' text format (llama-server's GET /metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// RefusedFor counts a refusal made before any model is named (GuardOptions.Refused of a router in front of
// Servers: "origin" or "host"), under an empty model label.
func (m *Metrics) RefusedFor(reason string) {
	if m.byModel {
		m.refused.WithLabelValues("", reason).Inc()
		return
	}
	m.refused.WithLabelValues(reason).Inc()
}

// metrics is one Server's view of a registry: its series (its model's, in a shared registry) and the live
// gauges it reports until it detaches.
type metrics struct {
	reg                     *Metrics
	model                   string
	busy, queue, ledgerSize func() float64
	requests, refused       *prometheus.CounterVec
}

// attach adds a Server named name (the model label value in a shared registry; a Server's own registry,
// newRegistry(false), has no label) with its live gauges. busySlots and queueLen give
// llamacpp:requests_processing and llamacpp:requests_deferred as llama-server computes them for
// SERVER_TASK_TYPE_METRICS (server-context.cpp:2503–2514: the slots whose is_processing() holds; the
// deferred tasks): a request waiting for a slot is deferred, not processing. ledgerSize may be nil (no
// ledger).
func (m *Metrics) attach(name string, busySlots, queueLen, ledgerSize func() float64) *metrics {
	model, _ := m.label(name)
	requests, refused := m.requests, m.refused
	if m.byModel {
		requests = m.requests.MustCurryWith(prometheus.Labels{"model": model})
		refused = m.refused.MustCurryWith(prometheus.Labels{"model": model})
	}
	s := &metrics{reg: m, model: model, busy: busySlots, queue: queueLen, ledgerSize: ledgerSize,
		requests: requests, refused: refused}
	m.mu.Lock()
	m.servers[s] = struct{}{}
	m.mu.Unlock()
	return s
}

// detach stops reporting the Server's live gauges (Server.Close); its counters stay.
func (s *metrics) detach() {
	s.reg.mu.Lock()
	delete(s.reg.servers, s)
	s.reg.mu.Unlock()
}

// refusedFor counts a refusal before generation: reason is one of queue_full, model_changed, context, invalid, origin (a page
// of a refused origin), host (a Host header refused on a loopback connection).
func (s *metrics) refusedFor(reason string) { s.refused.WithLabelValues(reason).Inc() }

// request counts an answered HTTP request.
func (s *metrics) request(route string, code int) {
	s.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

// handler serves the registry the Server reports to.
func (s *metrics) handler() http.Handler { return s.reg.Handler() }

// liveGauges collects llamacpp:requests_processing, llamacpp:requests_deferred and bankml:ledger_size from
// the Servers open now, summed by model (a model being loaded again may briefly have two).
type liveGauges struct {
	m                            *Metrics
	processing, deferred, ledger *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (g *liveGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.processing
	ch <- g.deferred
	ch <- g.ledger
}

// Collect implements prometheus.Collector. The Servers' functions are called outside the registry's lock
// (they read the engines).
func (g *liveGauges) Collect(ch chan<- prometheus.Metric) {
	g.m.mu.Lock()
	servers := make([]*metrics, 0, len(g.m.servers))
	for s := range g.m.servers {
		servers = append(servers, s)
	}
	g.m.mu.Unlock()
	type sums struct {
		processing, deferred, ledger float64
		hasLedger                    bool
	}
	by := map[string]*sums{}
	for _, s := range servers {
		x := by[s.model]
		if x == nil {
			x = &sums{}
			by[s.model] = x
		}
		x.processing += s.busy()
		x.deferred += s.queue()
		if s.ledgerSize != nil {
			x.ledger += s.ledgerSize()
			x.hasLedger = true
		}
	}
	for model, x := range by {
		var lv []string
		if g.m.byModel {
			lv = []string{model}
		}
		ch <- prometheus.MustNewConstMetric(g.processing, prometheus.GaugeValue, x.processing, lv...)
		ch <- prometheus.MustNewConstMetric(g.deferred, prometheus.GaugeValue, x.deferred, lv...)
		if x.hasLedger {
			ch <- prometheus.MustNewConstMetric(g.ledger, prometheus.GaugeValue, x.ledger, lv...)
		}
	}
}

// decodeGauges collects llamacpp:n_decode_total, llamacpp:n_busy_slots_per_decode,
// llamacpp:prompt_tokens_seconds and llamacpp:predicted_tokens_seconds by model, as
// server_task_result_metrics::to_metrics renders them: n_busy_slots / max(n_decode, 1), and the buckets'
// rates, which a scrape then resets (get_metrics: "the gauges are averaged over the window between two
// scrapes").
type decodeGauges struct {
	m                                               *Metrics
	nDecode, promptRate, predictRate, busyPerDecode *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (g *decodeGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.nDecode
	ch <- g.promptRate
	ch <- g.predictRate
	ch <- g.busyPerDecode
}

// Collect implements prometheus.Collector (once per scrape: it resets the buckets).
func (g *decodeGauges) Collect(ch chan<- prometheus.Metric) {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	for model, d := range g.m.totals {
		var lv []string
		if g.m.byModel {
			lv = []string{model}
		}
		ch <- prometheus.MustNewConstMetric(g.nDecode, prometheus.CounterValue, float64(d.n), lv...)
		ch <- prometheus.MustNewConstMetric(g.promptRate, prometheus.GaugeValue, d.prompt.perSecond(), lv...)
		ch <- prometheus.MustNewConstMetric(g.predictRate, prometheus.GaugeValue, d.predict.perSecond(), lv...)
		ch <- prometheus.MustNewConstMetric(g.busyPerDecode, prometheus.GaugeValue, float64(d.busySlots)/float64(max(d.n, 1)), lv...)
		d.prompt, d.predict = bucket{}, bucket{}
	}
}
