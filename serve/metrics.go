package serve

import (
	"net/http"
	"strconv"
	"sync"

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

	mu      sync.Mutex            // guards servers and maxSeen
	servers map[*metrics]struct{} // the Servers open now (live gauges)
	maxSeen map[string]float64    // llamacpp:n_tokens_max by model
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
	m := &Metrics{reg: prometheus.NewRegistry(), byModel: byModel, servers: map[*metrics]struct{}{}, maxSeen: map[string]float64{}}
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
	return m
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
	reg                      *Metrics
	model                    string
	busy, queue, ledgerSize  func() float64
	promptTokens             prometheus.Counter
	promptCached             prometheus.Counter
	promptSeconds, predicted prometheus.Counter
	predictedSecs            prometheus.Counter
	nTokensMax               prometheus.Gauge
	requests, refused        *prometheus.CounterVec
}

// newMetrics is a Server's own registry. busySlots and queueLen give llamacpp:requests_processing and
// llamacpp:requests_deferred as llama-server computes them for SERVER_TASK_TYPE_METRICS
// (server-context.cpp:2503–2514: the slots whose is_processing() holds; the deferred tasks): a request
// waiting for a slot is deferred, not processing. ledgerSize may be nil (no ledger).
func newMetrics(busySlots, queueLen, ledgerSize func() float64) *metrics {
	return newRegistry(false).attach("", busySlots, queueLen, ledgerSize)
}

// attach adds a Server of the model named model (the label value in a shared registry) with its live gauges,
// as newMetrics describes them.
func (m *Metrics) attach(model string, busySlots, queueLen, ledgerSize func() float64) *metrics {
	var lv []string
	requests, refused := m.requests, m.refused
	if m.byModel {
		lv = []string{model}
		requests = m.requests.MustCurryWith(prometheus.Labels{"model": model})
		refused = m.refused.MustCurryWith(prometheus.Labels{"model": model})
	}
	s := &metrics{reg: m, model: model, busy: busySlots, queue: queueLen, ledgerSize: ledgerSize,
		promptTokens: m.promptTokens.WithLabelValues(lv...), promptCached: m.promptCached.WithLabelValues(lv...),
		promptSeconds: m.promptSeconds.WithLabelValues(lv...), predicted: m.predicted.WithLabelValues(lv...),
		predictedSecs: m.predictedSecs.WithLabelValues(lv...), nTokensMax: m.nTokensMax.WithLabelValues(lv...),
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

// answered counts a finished answer's tokens and times (Server.finish calls it).
func (s *metrics) answered(u usage) {
	s.promptTokens.Add(float64(max(u.PromptTokens-u.CachedTokens, 0)))
	s.promptCached.Add(float64(u.CachedTokens))
	s.promptSeconds.Add(u.PromptMS / 1e3)
	s.predicted.Add(float64(u.CompletionTokens))
	s.predictedSecs.Add(u.PredictedMS / 1e3)
	s.reg.mu.Lock()
	if n := float64(u.PromptTokens + u.CompletionTokens); n > s.reg.maxSeen[s.model] {
		s.reg.maxSeen[s.model] = n
		s.nTokensMax.Set(n)
	}
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
