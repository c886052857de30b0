package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Family describes one metric family for the metrics reference
// (docs/reference/metrics.md, make docs).
type Family struct {
	Name string
	// Type is counter, gauge, histogram, summary or untyped.
	Type string
	Help string
	// Labels are the label names, constant ones included, sorted.
	Labels []string
}

// Families describes every family of m's registry, sorted by name: those
// it would expose now, and those a vector declares before its first
// series, which a scrape does not show yet (the HTTP families before the
// first request).
func (m *Metrics) Families() ([]Family, error) {
	gathered, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	byName := map[string]Family{}
	for _, mf := range gathered {
		byName[mf.GetName()] = Family{Name: mf.GetName(), Type: typeName(mf.GetType()), Help: mf.GetHelp(), Labels: labelNames(mf)}
	}
	// Every Desc first: Describe holds the registry's read lock, which
	// vectorType's Register waits for.
	ch := make(chan *prometheus.Desc)
	go func() {
		m.reg.Describe(ch)
		close(ch)
	}()
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	var errs []error
	for _, d := range descs {
		f, err := describe(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if g, ok := byName[f.Name]; ok {
			f.Type = g.Type
		} else if f.Type, err = m.vectorType(d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
			continue
		}
		byName[f.Name] = f
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	fams := make([]Family, 0, len(byName))
	for _, f := range byName {
		fams = append(fams, f)
	}
	slices.SortFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return fams, nil
}

// describe reads the name, help and label names a Desc keeps private: a
// constant metric built from it, gathered by a registry of its own,
// carries them.
func describe(d *prometheus.Desc) (Family, error) {
	if err := d.Err(); err != nil {
		return Family{}, err
	}
	for n := range 64 {
		values := slices.Repeat([]string{"_"}, n)
		metric, err := prometheus.NewConstMetric(d, prometheus.UntypedValue, 0, values...)
		if err != nil {
			continue // not the number of variable labels
		}
		reg := prometheus.NewRegistry()
		if err := reg.Register(constCollector{d, metric}); err != nil {
			return Family{}, err
		}
		mfs, err := reg.Gather()
		if err != nil {
			return Family{}, err
		}
		mf := mfs[0]
		return Family{Name: mf.GetName(), Help: mf.GetHelp(), Labels: labelNames(mf)}, nil
	}
	return Family{}, fmt.Errorf("metrics: cannot describe %s", d)
}

// vectorType is the type of the vector that registered d: registering
// another collector with the same single Desc hands back the existing one
// (AlreadyRegisteredError) and changes nothing.
func (m *Metrics) vectorType(d *prometheus.Desc) (string, error) {
	probe := constCollector{desc: d}
	err := m.reg.Register(probe)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		if err == nil {
			m.reg.Unregister(probe)
		}
		return "", fmt.Errorf("described but not gathered, and not a vector (%v)", err)
	}
	switch are.ExistingCollector.(type) {
	case *prometheus.CounterVec:
		return "counter", nil
	case *prometheus.GaugeVec:
		return "gauge", nil
	case *prometheus.HistogramVec:
		return "histogram", nil
	case *prometheus.SummaryVec:
		return "summary", nil
	}
	return "", fmt.Errorf("described but not gathered, and a %T", are.ExistingCollector)
}

// constCollector describes one Desc and collects metric, if any.
type constCollector struct {
	desc   *prometheus.Desc
	metric prometheus.Metric
}

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	if c.metric != nil {
		ch <- c.metric
	}
}

func typeName(t dto.MetricType) string {
	return strings.ToLower(t.String())
}

// labelNames are the label names of a family's series, sorted.
func labelNames(mf *dto.MetricFamily) []string {
	var names []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(names, l.GetName()) {
				names = append(names, l.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}
