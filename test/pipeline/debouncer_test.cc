#include "pipeline/debouncer.h"

#include <vector>

#include "gtest/gtest.h"
#include "model/mesh_kinds.h"

namespace cxds {
namespace {

ConfigKey Key(const std::string& kind, const std::string& name) { return {kind, "default", name}; }

PushRequest Config(const std::string& name) {
  PushRequest r;
  r.full = true;
  r.configs = {Key(kind::kServiceEntry, name)};
  r.reasons = {{reason::kConfig, 1}};
  return r;
}

PushRequest Endpoint(const std::string& name) {
  PushRequest r;
  r.configs = {Key(kind::kEndpoints, name)};
  r.reasons = {{reason::kEndpoint, 1}};
  return r;
}

struct Pushed {
  PushRequest request;
  uint64_t number;
  absl::Time at;
};

class DebouncerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Debouncer> Make(DebounceOptions options) {
    return std::make_unique<Debouncer>(
        scheduler_, options,
        [this](PushRequest request, uint64_t number) {
          pushed_.push_back({std::move(request), number, scheduler_.clock().Now()});
        },
        &metrics_);
  }
  absl::Duration SinceStart(const Pushed& p) const { return p.at - start_; }

  SimulatedScheduler scheduler_;
  absl::Time start_ = scheduler_.clock().Now();
  MetricsRegistry metrics_;
  std::vector<Pushed> pushed_;
};

TEST_F(DebouncerTest, OneChangeIsPushedAfterTheQuietPeriod) {
  auto debouncer = Make({});
  debouncer->ConfigUpdate(Config("a"));
  scheduler_.AdvanceBy(absl::Milliseconds(99));
  EXPECT_TRUE(pushed_.empty());
  scheduler_.AdvanceBy(absl::Milliseconds(1));
  ASSERT_EQ(pushed_.size(), 1u);
  EXPECT_EQ(SinceStart(pushed_[0]), absl::Milliseconds(100));
  EXPECT_EQ(pushed_[0].number, 1u);
  EXPECT_EQ(debouncer->inbound_updates(), 1u);
  EXPECT_EQ(debouncer->committed_updates(), 1u);
}

TEST_F(DebouncerTest, EachChangeRestartsTheQuietPeriodAndTheBatchIsMerged) {
  auto debouncer = Make({});
  for (int i = 0; i < 5; ++i) {
    debouncer->ConfigUpdate(Config("s" + std::to_string(i)));
    scheduler_.AdvanceBy(absl::Milliseconds(60));  // shorter than the quiet period
  }
  EXPECT_TRUE(pushed_.empty());
  // The last change came at 240 ms: the batch goes out at 340 ms, as one push.
  scheduler_.AdvanceBy(absl::Milliseconds(40));
  ASSERT_EQ(pushed_.size(), 1u);
  EXPECT_EQ(SinceStart(pushed_[0]), absl::Milliseconds(340));
  EXPECT_EQ(pushed_[0].request.configs.size(), 5u);
  EXPECT_EQ(pushed_[0].request.reasons[reason::kConfig], 5);
  EXPECT_EQ(pushed_[0].request.start, start_) << "the merged start is the first change's";
  EXPECT_EQ(debouncer->committed_updates(), 5u);
}

TEST_F(DebouncerTest, TheCeilingPushesEvenIfChangesKeepComing) {
  DebounceOptions options;
  options.debounce_after = absl::Milliseconds(100);
  options.debounce_max = absl::Seconds(1);
  auto debouncer = Make(options);
  // A change every 50 ms for 3 s: never quiet for 100 ms.
  for (int i = 0; i < 60; ++i) {
    debouncer->ConfigUpdate(Config("s" + std::to_string(i)));
    scheduler_.AdvanceBy(absl::Milliseconds(50));
  }
  ASSERT_GE(pushed_.size(), 2u);
  EXPECT_EQ(SinceStart(pushed_[0]), absl::Seconds(1)) << "the first batch goes out at the ceiling";
  for (size_t i = 1; i < pushed_.size(); ++i) {
    EXPECT_LE(pushed_[i].at - pushed_[i - 1].at, absl::Seconds(1) + absl::Milliseconds(50));
  }
  scheduler_.AdvanceBy(absl::Seconds(2));
  EXPECT_EQ(debouncer->committed_updates(), 60u) << "nothing is lost";
  EXPECT_EQ(debouncer->inbound_updates(), 60u);
}

TEST_F(DebouncerTest, EndpointChangesAreDebouncedByDefault) {
  auto debouncer = Make({});
  debouncer->ConfigUpdate(Endpoint("a"));
  debouncer->ConfigUpdate(Endpoint("b"));
  scheduler_.RunUntilIdle();
  EXPECT_TRUE(pushed_.empty());
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(pushed_.size(), 1u);
  EXPECT_EQ(pushed_[0].request.configs.size(), 2u);
  EXPECT_TRUE(pushed_[0].request.EndpointOnly());
}

TEST_F(DebouncerTest, WithEdsDebounceOffEndpointChangesGoAtOnceAndAlone) {
  DebounceOptions options;
  options.eds_debounce = false;
  auto debouncer = Make(options);
  debouncer->ConfigUpdate(Config("svc"));
  debouncer->ConfigUpdate(Endpoint("a"));
  debouncer->ConfigUpdate(Endpoint("b"));
  scheduler_.RunUntilIdle();  // no simulated time passes
  ASSERT_EQ(pushed_.size(), 2u) << "each endpoint-only change is its own push, at once";
  EXPECT_EQ(pushed_[0].number, 0u);
  EXPECT_EQ(pushed_[0].request.configs.begin()->name, "a");
  EXPECT_EQ(pushed_[1].request.configs.begin()->name, "b");
  EXPECT_EQ(SinceStart(pushed_[1]), absl::ZeroDuration());
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(pushed_.size(), 3u) << "the config change is still debounced";
  EXPECT_TRUE(pushed_[2].request.full);
  EXPECT_EQ(pushed_[2].request.configs.size(), 1u);
}

TEST_F(DebouncerTest, AFullChangeMakesTheMergedPushFull) {
  auto debouncer = Make({});
  debouncer->ConfigUpdate(Endpoint("a"));
  debouncer->ConfigUpdate(Config("b"));
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(pushed_.size(), 1u);
  EXPECT_TRUE(pushed_[0].request.full);
  EXPECT_FALSE(pushed_[0].request.EndpointOnly());
}

// Changes arriving during a push form the next batch; pushes never overlap.
TEST_F(DebouncerTest, ChangesDuringAPushWaitForItAndFormTheNextBatch) {
  int running = 0;
  int max_running = 0;
  Debouncer* self = nullptr;
  std::vector<PushRequest> seen;
  Debouncer debouncer(scheduler_, {}, [&](PushRequest request, uint64_t) {
    running++;
    max_running = std::max(max_running, running);
    if (seen.empty()) {
      self->ConfigUpdate(Config("during-1"));
      self->ConfigUpdate(Config("during-2"));
    }
    seen.push_back(std::move(request));
    running--;
  });
  self = &debouncer;
  debouncer.ConfigUpdate(Config("first"));
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(seen.size(), 1u);
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].configs.size(), 2u);
  EXPECT_EQ(max_running, 1);
  EXPECT_EQ(debouncer.committed_updates(), 3u);
}

TEST_F(DebouncerTest, CountersAndDebounceTimeAreExported) {
  auto debouncer = Make({});
  debouncer->ConfigUpdate(Config("a"));
  debouncer->ConfigUpdate(Endpoint("b"));
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find("pilot_inbound_updates{type=\"config\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_inbound_updates{type=\"eds\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("cxds_committed_updates 2"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_debounce_time_count 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace cxds
