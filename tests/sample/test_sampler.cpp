// Sampler tests: expected values come from the definitions (probabilities, penalty formulas),
// never from the sampler's own output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "core/error.h"
#include "sample/chain.h"
#include "sample/sampler.h"

using memra::Sampler;
using memra::SamplerOptions;

namespace {

SamplerOptions plain(float temp = 1.0f) {
  SamplerOptions o;
  o.temperature = temp;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.typical_p = 1.0f;
  o.seed = 1234;
  return o;
}

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back((float)std::log(x));
  return l;
}

// Empirical frequencies over n draws.
std::vector<double> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<double> h(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) h[(size_t)s.sample(logits)] += 1.0;
  for (auto& x : h) x /= n;
  return h;
}

// |freq - p| within 5 standard deviations of a binomial proportion.
void expect_distribution(const std::vector<double>& got, const std::vector<double>& want, int n) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double sd = std::sqrt(std::max(want[i] * (1 - want[i]), 1e-12) / n);
    EXPECT_NEAR(got[i], want[i], 5 * sd + 1e-12) << "token " << i;
  }
}

}  // namespace

TEST(Argmax, TiesGoToSmallestIndex) {
  EXPECT_EQ(memra::argmax(std::vector<float>{1, 3, 2, 3, 3}), 1);
  EXPECT_EQ(memra::argmax(std::vector<float>{-1, -1}), 0);
  EXPECT_EQ(memra::argmax(std::vector<float>{NAN, -5, NAN, -4}), 3);
  EXPECT_EQ(memra::argmax(std::vector<float>{-INFINITY, INFINITY, INFINITY}), 1);
  EXPECT_THROW(memra::argmax(std::vector<float>{}), memra::Error);
}

TEST(Sampler, GreedyIsArgmaxAndConsumesNoDraw) {
  Sampler s(plain(0.0f));
  std::vector<float> l{0.5f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(s.sample(l), 1);
  EXPECT_EQ(s.draws(), 0u);
}

TEST(Sampler, PenaltyFormula) {
  using memra::sample_chain::penalize;
  EXPECT_EQ(penalize(2.0f, 1, 2.0f, 0.0f, 0.0f), 1.0f);    // positive: divided
  EXPECT_EQ(penalize(-2.0f, 1, 2.0f, 0.0f, 0.0f), -4.0f);  // negative: multiplied
  EXPECT_EQ(penalize(0.0f, 1, 2.0f, 0.0f, 0.0f), 0.0f);
  EXPECT_EQ(penalize(1.0f, 3, 1.0f, 0.5f, 1.0f), 1.0f - 2.5f);
  EXPECT_EQ(penalize(1.0f, 0, 2.0f, 0.5f, 1.0f), 1.0f);  // not in the window: untouched
}

TEST(Sampler, PenaltiesChangeGreedyChoice) {
  auto o = plain(0.0f);
  o.repeat_penalty = 2.0f;
  Sampler s(o);
  std::vector<float> l{1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(l), 1);
  s.accept(1);  // 3 -> 1.5 < 2
  EXPECT_EQ(s.sample(l), 2);
  s.accept(2);  // 2 -> 1.0; now 1.0 (id 0), 1.5 (id 1), 1.0 (id 2)
  EXPECT_EQ(s.sample(l), 1);

  auto f = plain(0.0f);
  f.frequency_penalty = 0.6f;
  Sampler sf(f);
  for (int i = 0; i < 2; ++i) sf.accept(1);  // 3 - 1.2 = 1.8 < 2
  EXPECT_EQ(sf.sample(l), 2);
  auto p = plain(0.0f);
  p.presence_penalty = 0.9f;
  Sampler sp(p);
  for (int i = 0; i < 5; ++i) sp.accept(1);  // presence ignores the count: 3 - 0.9 = 2.1 > 2
  EXPECT_EQ(sp.sample(l), 1);
}

TEST(Sampler, WindowKeepsLastN) {
  auto o = plain();
  o.penalty_last_n = 2;
  Sampler s(o);
  for (int t : {5, 6, 7, 7}) s.accept(t);
  EXPECT_EQ(s.window(), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(s.count_in_window(7), 2);
  EXPECT_EQ(s.count_in_window(5), 0);
  o.penalty_last_n = 0;
  Sampler off(o);
  off.accept(3);
  EXPECT_TRUE(off.window().empty());
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  std::vector<float> l(50, 0.0f);  // uniform over 50 tokens
  auto o = plain();
  Sampler a(o), b(o);
  o.seed = 999;
  Sampler c(o);
  int same_ab = 0, same_ac = 0;
  for (int i = 0; i < 200; ++i) {
    const int x = a.sample(l), y = b.sample(l), z = c.sample(l);
    same_ab += x == y;
    same_ac += x == z;
  }
  EXPECT_EQ(same_ab, 200);
  EXPECT_LT(same_ac, 30);  // expected 200/50 = 4 coincidences
  a.reset();
  Sampler fresh(plain());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.sample(l), fresh.sample(l));
}

TEST(Sampler, DrawIsInverseCdfOfCounterUniform) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  Sampler s(plain());
  const auto l = log_probs(p);
  // Candidate order is by logit descending: 3, 2, 1, 0.
  const int order[4] = {3, 2, 1, 0};
  int checked = 0;
  for (uint64_t i = 0; i < 500; ++i) {
    const double u = memra::sample_chain::uniform01(1234, i);
    double cum = 0;
    int want = -1;
    bool near_edge = false;
    for (int j : order) {
      cum += p[(size_t)j];
      near_edge |= std::fabs(cum - u) < 1e-6;
      if (want < 0 && cum > u) want = j;
    }
    const int got = s.sample(l);
    if (near_edge) continue;
    EXPECT_EQ(got, want) << "draw " << i << " u=" << u;
    ++checked;
  }
  EXPECT_GT(checked, 490);
}

TEST(Sampler, UniformIsInUnitIntervalWithMeanHalf) {
  double sum = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const double u = memra::sample_chain::uniform01(7, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 5 * std::sqrt(1.0 / 12 / 100000));
}

TEST(Sampler, TemperatureOneMatchesSoftmax) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  Sampler s(plain());
  const int n = 40000;
  expect_distribution(histogram(s, log_probs(p), n), p, n);
}

TEST(Sampler, TemperatureTwoFlattens) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  Sampler s(plain(2.0f));
  // softmax(log p / 2) = sqrt(p) / sum sqrt(p)
  std::vector<double> want;
  double z = 0;
  for (double x : p) z += std::sqrt(x);
  for (double x : p) want.push_back(std::sqrt(x) / z);
  const int n = 40000;
  expect_distribution(histogram(s, log_probs(p), n), want, n);
}

TEST(Sampler, TopKKeepsTheKLargest) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  auto o = plain();
  o.top_k = 2;
  Sampler s(o);
  const int n = 20000;
  expect_distribution(histogram(s, log_probs(p), n), {0, 0, 3.0 / 7, 4.0 / 7}, n);
}

TEST(Sampler, TopKTieKeepsSmallerId) {
  auto o = plain();
  o.top_k = 1;
  Sampler s(o);
  std::vector<float> l{0.0f, 1.0f, 1.0f, 1.0f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(l), 1);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingP) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  auto o = plain();
  o.top_p = 0.65f;  // 0.4 < 0.65 <= 0.4 + 0.3
  Sampler s(o);
  const int n = 20000;
  expect_distribution(histogram(s, log_probs(p), n), {0, 0, 3.0 / 7, 4.0 / 7}, n);
  o.top_p = 0.35f;  // the top token alone
  Sampler s1(o);
  expect_distribution(histogram(s1, log_probs(p), 2000), {0, 0, 0, 1}, 2000);
}

TEST(Sampler, MinPKeepsTokensAboveFractionOfMax) {
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  auto o = plain();
  o.min_p = 0.6f;  // threshold 0.24: keeps 0.4 and 0.3
  Sampler s(o);
  const int n = 20000;
  expect_distribution(histogram(s, log_probs(p), n), {0, 0, 3.0 / 7, 4.0 / 7}, n);
  o.min_p = 0.4f;  // threshold 0.16: keeps 0.2 too
  Sampler s2(o);
  expect_distribution(histogram(s2, log_probs(p), n), {0, 2.0 / 9, 3.0 / 9, 4.0 / 9}, n);
}

TEST(Sampler, TypicalKeepsTokensNearTheEntropy) {
  // p = 1/2, 1/4, 1/8, 1/8: H = 1.75 ln2; |-ln p - H| = 0.75, 0.25, 1.25, 1.25 (x ln2).
  const std::vector<double> p{0.5, 0.25, 0.125, 0.125};
  auto o = plain();
  o.typical_p = 0.7f;  // by score: id1 (cum .25), id0 (cum .75 >= .7) -> {0, 1}
  Sampler s(o);
  const int n = 20000;
  expect_distribution(histogram(s, log_probs(p), n), {2.0 / 3, 1.0 / 3, 0, 0}, n);
  o.typical_p = 0.2f;  // id1 alone
  Sampler s1(o);
  expect_distribution(histogram(s1, log_probs(p), 2000), {0, 1, 0, 0}, 2000);
}

TEST(Sampler, ChainOrderTopKBeforeTopP) {
  // top-k 3 leaves .2,.3,.4 renormalized to 2/9, 3/9, 4/9; top-p 0.7 then needs 4/9 + 3/9.
  const std::vector<double> p{0.1, 0.2, 0.3, 0.4};
  auto o = plain();
  o.top_k = 3;
  o.top_p = 0.7f;
  Sampler s(o);
  const int n = 20000;
  expect_distribution(histogram(s, log_probs(p), n), {0, 0, 3.0 / 7, 4.0 / 7}, n);
}

TEST(Sampler, NanLogitIsNeverPicked) {
  Sampler s(plain());
  std::vector<float> l{NAN, 0.0f, NAN, 0.0f};
  for (int i = 0; i < 200; ++i) {
    const int t = s.sample(l);
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sampler, RejectsBadOptions) {
  auto o = plain();
  o.top_p = 0.0f;
  EXPECT_THROW(Sampler{o}, memra::Error);
  o = plain();
  o.min_p = 1.5f;
  EXPECT_THROW(Sampler{o}, memra::Error);
  o = plain();
  o.repeat_penalty = 0.0f;
  EXPECT_THROW(Sampler{o}, memra::Error);
  o = plain();
  o.penalty_last_n = -1;
  EXPECT_THROW(Sampler{o}, memra::Error);
  o = plain();
  o.typical_p = 2.0f;
  EXPECT_THROW(Sampler{o}, memra::Error);
}

// distribution() + draw() are sample() split in two: the same id for the same draw counter, for
// every stage of the chain, and the same number of draws consumed (speculative sampling builds
// on it).
TEST(SamplerDistribution, DrawOfDistributionIsSample) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<SamplerOptions> cfgs;
  for (float t : {0.0f, 0.7f, 1.3f})
    for (int k : {0, 5, 40})
      for (float top_p : {1.0f, 0.9f})
        for (float min_p : {0.0f, 0.05f}) {
          SamplerOptions o = plain(t);
          o.top_k = k;
          o.top_p = top_p;
          o.min_p = min_p;
          o.typical_p = k == 40 && top_p == 1.0f ? 0.8f : 1.0f;
          o.repeat_penalty = min_p > 0 ? 1.3f : 1.0f;
          o.seed = (uint64_t)cfgs.size() + 11;
          cfgs.push_back(o);
        }
  for (const auto& o : cfgs) {
    Sampler a(o), b(o);
    for (int step = 0; step < 50; ++step) {
      std::vector<float> logits(200);
      for (auto& v : logits) v = nd(rng);
      const int32_t want = a.sample(logits);
      const memra::Distribution d = b.distribution(logits);
      EXPECT_EQ(b.draws(), a.draws() - (o.temperature > 0 ? 1u : 0u)) << "distribution() must not draw";
      const int32_t got = b.draw(d);
      ASSERT_EQ(got, want) << "t=" << o.temperature << " k=" << o.top_k << " step " << step;
      EXPECT_EQ(a.draws(), b.draws());
      a.accept(want);
      b.accept(got);
      if (o.temperature <= 0) {  // greedy: the argmax alone
        ASSERT_EQ(d.ids.size(), 1u);
        EXPECT_DOUBLE_EQ(d.prob(want), 1.0);
      }
    }
  }
}

// The probabilities against softmax(logit / T) of the kept candidates, from the definition.
TEST(SamplerDistribution, ProbabilitiesAreTheTemperatureSoftmaxOfTheKept) {
  const std::vector<double> p{0.05, 0.1, 0.15, 0.3, 0.4};
  SamplerOptions o = plain(2.0f);
  o.top_k = 3;  // keeps ids 4, 3, 2
  Sampler s(o);
  const auto d = s.distribution(log_probs(p));
  ASSERT_EQ(d.ids, (std::vector<int32_t>{4, 3, 2}));
  double z = 0;
  for (int i : {2, 3, 4}) z += std::sqrt(p[(size_t)i]);
  for (int i : {2, 3, 4}) EXPECT_NEAR(d.prob(i), std::sqrt(p[(size_t)i]) / z, 1e-7) << i;
  EXPECT_EQ(d.prob(0), 0.0);
  EXPECT_EQ(d.prob(99), 0.0);
  double sum = 0;
  for (int32_t id : d.ids) sum += d.prob(id);
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(SamplerDistribution, SetWindowKeepsTheDrawCounter) {
  SamplerOptions o = plain();
  o.penalty_last_n = 3;
  Sampler s(o);
  (void)s.sample(std::vector<float>{0.f, 1.f});
  s.set_window(std::vector<int32_t>{1, 2, 3, 4, 4});
  EXPECT_EQ(s.window(), (std::vector<int32_t>{3, 4, 4}));
  EXPECT_EQ(s.draws(), 1u);
  EXPECT_THROW((void)s.draw(memra::Distribution{}), memra::Error);
}

namespace memra {
namespace {

// n logits: a fraction `special_share` (of 10) from `special`, the rest normal with sd 4, half of
// those rounded to whole numbers (ties).
std::vector<float> mixed_logits(std::mt19937& rng, size_t n, std::span<const float> special, int special_share) {
  std::uniform_int_distribution<int> pick(0, 9), which(0, (int)special.size() - 1);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logit(n);
  for (auto& x : logit)
    x = pick(rng) < special_share ? special[(size_t)which(rng)] : pick(rng) < 5 ? std::round(nd(rng)) : nd(rng);
  return logit;
}

// Every id in candidate order by a comparison sort (sample_chain::before): the reference order.
std::vector<int32_t> sorted_ids(const std::vector<float>& logit) {
  std::vector<int32_t> ids(logit.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return sample_chain::before(logit[a], a, logit[b], b); });
  return ids;
}

// candidate_order_all (the top_k-off path's radix sort) gives the permutation of a comparison sort
// by sample_chain::before, over values with many ties, both zeros, infinities and tiny / huge
// magnitudes, at several lengths.
TEST(SamplerOrder, RadixOrderEqualsComparisonSort) {
  std::mt19937 rng(20264405);
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-38f, -1e-38f, 3e38f, -3e38f, 1.5f, -1.5f};
  std::vector<uint64_t> keys, tmp;
  for (size_t n : {1u, 2u, 7u, 1000u, 151936u}) {
    const auto logit = mixed_logits(rng, n, special, 3);
    std::vector<int32_t> got;
    candidate_order_all(logit, got, keys, tmp);
    EXPECT_EQ(got, sorted_ids(logit)) << "n = " << n;
  }
}

// top_k_ids (the top-k path's threshold gather) gives the first k of a comparison sort by
// sample_chain::before, in its order, with ties spanning the k-th place, both zeros and infinities;
// and declines (false) where its threshold does not apply.
TEST(SamplerOrder, TopKIdsEqualComparisonSortPrefix) {
  std::mt19937 rng(20264406);
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 7.0f, 7.0f, 7.0f, -2.0f, 1.5f, 12.0f};
  std::vector<float> scratch;
  for (size_t n : {4096u, 32000u, 151936u}) {
    const auto logit = mixed_logits(rng, n, special, 2);
    const auto all = sorted_ids(logit);
    for (int32_t k : {1, 2, 40, 300, 512}) {
      std::vector<int32_t> got;
      ASSERT_TRUE(top_k_ids(logit, k, got, scratch)) << "n = " << n << ", k = " << k;
      EXPECT_EQ(got, std::vector<int32_t>(all.begin(), all.begin() + k)) << "n = " << n << ", k = " << k;
    }
    std::vector<int32_t> untouched = {5};
    EXPECT_FALSE(top_k_ids(logit, 513, untouched, scratch));
    EXPECT_EQ(untouched, std::vector<int32_t>{5});
  }
  std::vector<float> small(4095, 1.0f);
  std::vector<int32_t> id;
  EXPECT_FALSE(top_k_ids(small, 40, id, scratch));
}

// NaN entries rank as -inf in top_k_ids (the sampler hands it the row unsanitized when there are no
// penalties): the same first k as a sort of the row with NaN replaced by -inf; and it declines where
// the threshold itself is -inf (the NaNs and -infs would have to be ordered among the first k).
TEST(SamplerOrder, TopKIdsRankNanAsMinusInfinity) {
  std::mt19937 rng(20264501);
  const float special[] = {NAN, NAN, -INFINITY, 0.0f, -0.0f, 7.0f, 7.0f, INFINITY};
  std::vector<float> scratch;
  for (size_t n : {4096u, 151936u}) {
    const auto logit = mixed_logits(rng, n, special, 4);
    auto clean = logit;
    for (auto& v : clean) v = std::isnan(v) ? -INFINITY : v;
    const auto all = sorted_ids(clean);
    for (int32_t k : {1, 40, 512}) {
      std::vector<int32_t> got;
      ASSERT_TRUE(top_k_ids(logit, k, got, scratch)) << "n = " << n << ", k = " << k;
      EXPECT_EQ(got, std::vector<int32_t>(all.begin(), all.begin() + k)) << "n = " << n << ", k = " << k;
    }
  }
  // 4096 entries, all NaN or -inf but 3: the 40th block maximum is -inf.
  std::vector<float> sparse(4096, NAN);
  for (size_t i = 0; i < sparse.size(); i += 2) sparse[i] = -INFINITY;
  sparse[5] = 1.0f, sparse[900] = 2.0f, sparse[4000] = 0.5f;
  std::vector<int32_t> untouched = {7};
  EXPECT_FALSE(top_k_ids(sparse, 40, untouched, scratch));
  EXPECT_EQ(untouched, std::vector<int32_t>{7});
}

// The sampler's top-k without penalties reads the row in place (no sanitized copy); with NaNs in the
// row it must draw what the copy's path draws: the same row with NaN as -inf, which takes that path
// for the rows above where top_k_ids declines... compared here through distribution(), candidate by
// candidate, against a sampler given the sanitized row.
TEST(SamplerOrder, TopKInPlaceEqualsSanitizedRow) {
  std::mt19937 rng(20264502);
  const float special[] = {NAN, -INFINITY, 3.0f, 3.0f, -0.0f, 0.0f};
  SamplerOptions o;
  o.seed = 9;
  o.temperature = 0.9f;
  o.top_p = 0.98f;
  o.min_p = 0.0f;
  for (int32_t k : {1, 40, 300}) {
    o.top_k = k;
    Sampler a(o), b(o);
    for (int step = 0; step < 20; ++step) {
      const auto logit = mixed_logits(rng, 151936, special, 2);
      auto clean = logit;
      for (auto& v : clean) v = std::isnan(v) ? -INFINITY : v;
      const Distribution da = a.distribution(logit), db = b.distribution(clean);
      ASSERT_EQ(da.ids, db.ids) << "k = " << k << ", step " << step;
      ASSERT_EQ(da.weights, db.weights) << "k = " << k << ", step " << step;
      EXPECT_EQ(a.sample(logit), b.sample(clean));
    }
  }
}

}  // namespace
}  // namespace memra
