// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/gen_headroom.h"

#include <algorithm>
#include <cstdio>

#include "common/text_out.h"

namespace batchscope {

namespace {

FigureRange range3(double a, double b, double c) {
  return {std::min({a, b, c}), std::max({a, b, c})};
}

}  // namespace

GenBand gen_band_of(const GenEvaluated& nominal, const GenScaledEvaluator& predict,
                    const BandFactors& factors) {
  GenBand b;
  b.fast = factors.low;
  b.slow = factors.high;
  const GenEvaluated fast = factors.low == 1 ? nominal : predict(nominal.options, factors.low, 1);
  const GenEvaluated slow = factors.high == 1 ? nominal : predict(nominal.options, factors.high, 1);
  b.ttft_ms = range3(nominal.ttft_ms, fast.ttft_ms, slow.ttft_ms);
  b.itl_ms = range3(nominal.itl_ms, fast.itl_ms, slow.itl_ms);
  b.tokens_per_s = range3(nominal.tokens_per_s, fast.tokens_per_s, slow.tokens_per_s);
  b.goodput_rps = range3(nominal.goodput_rps, fast.goodput_rps, slow.goodput_rps);
  return b;
}

Headroom gen_headroom_of(const Options& options, const GenScaledEvaluator& predict,
                         const GenSlo& slo, bool rate_applies) {
  Headroom h;
  h.rate_applies = rate_applies;
  h.slowdown = bisect_headroom([&](double s) { return meets_gen_slo(predict(options, s, 1), slo); },
                               h.slowdown_beyond);
  if (rate_applies) {
    h.rate = bisect_headroom([&](double r) { return meets_gen_slo(predict(options, 1, r), slo); },
                             h.rate_beyond);
  }
  return h;
}

const GenEvaluated* GenHeadroomResult::chosen() const {
  if (holds) return &checked[*holds];
  if (closest) return &checked[*closest];
  return nullptr;
}

GenHeadroomResult gen_rank_by_headroom(const GenTuneResult& result,
                                       const GenScaledEvaluator& predict,
                                       const HeadroomSettings& settings) {
  GenHeadroomResult out;
  out.needed = settings.needed;
  out.source = settings.source;
  out.band = settings.band;
  std::vector<GenEvaluated> pool;
  auto rate = [&](const GenEvaluated& e) {
    return result.objective == GenObjective::kThroughput ? e.tokens_per_s : e.goodput_rps;
  };
  double best_rate = 0;
  for (const GenEvaluated& e : result.evaluated) {
    if (!meets_gen_slo(e, result.slo)) continue;
    pool.push_back(e);
    best_rate = std::max(best_rate, rate(e));
  }
  auto stop = [&] { return settings.cancel && settings.cancel(); };
  std::vector<GenEvaluated> order;
  std::optional<size_t> holds;
  while (!pool.empty() && order.size() < settings.max_checks && !stop()) {
    if (holds && order.size() >= settings.shown) break;
    auto best = choose_gen_best(pool, result.slo, result.objective);
    if (!best) break;
    order.push_back(*best);
    std::erase_if(pool, [&](const GenEvaluated& e) { return e.options == best->options; });
    if (!holds && meets_gen_slo(predict(best->options, settings.needed, 1), result.slo)) {
      holds = order.size() - 1;
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    if (i >= settings.shown && (!holds || i != *holds)) continue;
    if (stop()) break;
    GenEvaluated e = order[i];
    e.band = gen_band_of(e, predict, settings.band);
    e.headroom = gen_headroom_of(e.options, predict, result.slo, settings.rate_applies);
    if (holds && i == *holds) out.holds = out.checked.size();
    out.checked.push_back(std::move(e));
  }
  if (out.holds && result.objective != GenObjective::kLatency) {
    const double floor = best_rate * (1 - kThroughputBand);
    out.holds = roomiest_tie(out.checked, *out.holds, out.needed,
                             [&](const GenEvaluated& e) { return rate(e) >= floor; });
  }
  if (!out.holds && !out.checked.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < out.checked.size(); ++i) {
      if (out.checked[i].headroom->slowdown > out.checked[best].headroom->slowdown) best = i;
    }
    out.closest = best;
  }
  return out;
}

void band_gen_front(std::vector<GenEvaluated>& front, const GenHeadroomResult& h,
                    const GenScaledEvaluator& predict, size_t at_most,
                    const std::function<bool()>& cancel) {
  for (size_t i = 0; i < front.size() && i < at_most; ++i) {
    if (cancel && cancel()) return;
    GenEvaluated& e = front[i];
    const auto same = std::find_if(h.checked.begin(), h.checked.end(),
                                   [&](const GenEvaluated& c) { return c.options == e.options; });
    if (same != h.checked.end()) {
      e.band = same->band;
      e.headroom = same->headroom;
    } else {
      e.band = gen_band_of(e, predict, h.band);
    }
  }
}

std::string gen_headroom_json(const GenHeadroomResult& h) {
  const GenEvaluated* c = h.chosen();
  std::string out =
      headroom_json_head(h.needed, h.source, h.band, c && h.fragile(), c ? &c->options : nullptr);
  out += "\"checked\":[";
  for (size_t i = 0; i < h.checked.size(); ++i) {
    const GenEvaluated& e = h.checked[i];
    out += i ? ",{\"options\":" : "{\"options\":";
    out += options_to_json(e.options);
    append_format(out, ",\"ttft_ms\":");
    append_json_number(out, e.ttft_ms);
    out += ",\"itl_ms\":";
    append_json_number(out, e.itl_ms);
    out += ",\"tokens_per_s\":";
    append_json_number(out, e.tokens_per_s);
    out += ",\"goodput_rps\":";
    append_json_number(out, e.goodput_rps);
    if (e.band) out += ",\"band\":" + gen_band_json(*e.band);
    if (e.headroom) out += ",\"headroom\":" + headroom_figures_json(*e.headroom);
    out += '}';
  }
  return out + "]}";
}

std::string gen_headroom_table(const GenHeadroomResult& h, const GenSlo& slo) {
  std::string out;
  const int q = slo.quantile;
  append_format(out,
                "\nHeadroom: the best that meet %s, in the objective's order; each must still "
                "meet it with the step cost %.2fx as slow, and its band is the step cost "
                "x%.2f..x%.2f (%s)\n",
                slo.describe().c_str(), h.needed, h.band.low, h.band.high, h.source.c_str());
  append_format(out, "%2s %-10s %5s %6s %10s %9s %17s %17s  %s\n", "", "scheduling", "seqs",
                "tokens", "tokens/s", "goodput", ("TTFT p" + std::to_string(q) + " band").c_str(),
                ("ITL p" + std::to_string(q) + " band").c_str(), "headroom (step cost, rate)");
  for (const GenEvaluated& e : h.checked) {
    const bool chosen = h.chosen() == &e;
    char ttft[48] = "", itl[48] = "";
    if (e.band) {
      std::snprintf(ttft, sizeof ttft, "%.1f..%.1f", e.band->ttft_ms.low, e.band->ttft_ms.high);
      std::snprintf(itl, sizeof itl, "%.2f..%.2f", e.band->itl_ms.low, e.band->itl_ms.high);
    }
    std::string room = "-";
    if (e.headroom) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%.2fx", e.headroom->slowdown_beyond ? ">=" : "",
                    e.headroom->slowdown);
      room = buf;
      if (e.headroom->rate_applies) {
        std::snprintf(buf, sizeof buf, " %s%+.0f%%", e.headroom->rate_beyond ? ">=" : "",
                      100 * (e.headroom->rate - 1));
        room += buf;
      }
      if (e.headroom->slowdown < h.needed) room += "  fragile";
    }
    append_format(out, "%2s %-10s %5u %6u %10.1f %9.2f %17s %17s  %s\n", chosen ? "*" : "",
                  scheduling_name(e.options.scheduling), e.options.max_num_seqs,
                  e.options.max_num_batched_tokens, e.tokens_per_s, e.goodput_rps, ttft, itl,
                  room.c_str());
  }
  if (h.checked.empty()) return out + "   none meets the objective\n";
  const GenEvaluated* c = h.chosen();
  append_format(out, "%s %s scheduling, %u sequences, %u tokens a step, which %s%s\n",
                h.holds ? "chosen:" : "no configuration shown holds; the closest:",
                scheduling_name(c->options.scheduling), c->options.max_num_seqs,
                c->options.max_num_batched_tokens,
                headroom_text(*c->headroom, "the step cost").c_str(),
                h.holds ? "" : ": chosen, fragile");
  return out;
}

}  // namespace batchscope
