// DnsRefresher on a simulated scheduler with a resolver answering from a table (no network):
// what DNS ServiceEntries' names resolve to becomes the endpoints gRPC nodes get, a change is
// an endpoint-only push of the hosts using the name, a failure keeps the last addresses, and
// a name no longer in the config is forgotten.
#include "controller/dns_refresher.h"

#include <map>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/generators.h"

namespace cxds {
namespace {

class TableResolver final : public NameResolver {
 public:
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) override {
    calls[name]++;
    auto it = table.find(name);
    if (it == table.end()) return absl::NotFoundError(StrCat(name, ": no such name"));
    return it->second;
  }
  std::map<std::string, absl::StatusOr<std::vector<std::string>>> table;
  std::map<std::string, int> calls;
};

constexpr char kDnsEntries[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: web}
spec:
  hosts: [api.example.com]
  ports: [{number: 8443, name: grpc-api}]
  resolution: DNS
  endpoints: [{address: eu.api.example.com, ports: {grpc-api: 9443}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ledger, namespace: web}
spec:
  hosts: [ledger.example.com]
  ports: [{number: 8080, name: grpc}]
  resolution: DNS_ROUND_ROBIN
)";

class DnsRefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ConfigStore::Update update = store_.ApplyFile("dns.yaml", kDnsEntries);
    ASSERT_TRUE(update.errors.empty()) << update.errors.front().ToString();
    model_.OnUpdate(update);
    PushPipeline::Options options;
    options.scheduler = &scheduler_;
    pipeline_ = std::make_unique<PushPipeline>(std::shared_ptr<PushContextBuilder>(&model_, [](auto*) {}), options);
    AddMeshGenerators(*pipeline_, model_);
    resolver_.table["eu.api.example.com"] = std::vector<std::string>{"127.0.0.61", "127.0.0.62"};
    resolver_.table["ledger.example.com"] = std::vector<std::string>{"127.0.0.71"};
  }

  // The addresses and ports of `host`'s endpoints on `port`.
  std::vector<std::string> Endpoints(const std::string& host, uint32_t port) {
    std::vector<std::string> out;
    const auto index = model_.endpoints();
    auto it = index->find(host);
    if (it == index->end() || !it->second->contains(port)) return out;
    for (const EndpointInfo& e : it->second->at(port)) out.push_back(StrCat(e.address, ":", e.port));
    return out;
  }

  SimulatedScheduler scheduler_;
  ConfigStore store_;
  MeshModel model_{store_, "cluster.local"};
  std::unique_ptr<PushPipeline> pipeline_;
  TableResolver resolver_;
};

TEST_F(DnsRefresherTest, ResolvedNamesAreTheEndpointsAndAChangeIsAnEndpointPushOfItsHosts) {
  EXPECT_THAT(NamesToResolve(*store_.Snapshot()), ::testing::ElementsAre("eu.api.example.com", "ledger.example.com"))
      << "endpoint names, and hosts without endpoints";
  DnsRefresher refresher({.interval = absl::Seconds(30)}, store_, model_, *pipeline_, resolver_, scheduler_);
  const PushRequest first = refresher.Refresh();
  EXPECT_THAT(first.configs, ::testing::UnorderedElementsAre(ConfigKey{kind::kEndpoints, "web", "api.example.com"},
                                                             ConfigKey{kind::kEndpoints, "web", "ledger.example.com"}));
  EXPECT_TRUE(first.EndpointOnly());
  EXPECT_THAT(Endpoints("api.example.com", 8443), ::testing::ElementsAre("127.0.0.61:9443", "127.0.0.62:9443"));
  EXPECT_THAT(Endpoints("ledger.example.com", 8080), ::testing::ElementsAre("127.0.0.71:8080"));
  EXPECT_TRUE(refresher.Refresh().configs.empty()) << "nothing changed";

  // Every interval: the same answers push nothing; a changed one pushes its host only.
  ASSERT_TRUE(pipeline_->Push(PushRequest{.full = true, .reasons = {{reason::kConfig, 1}}}).ok());
  const uint64_t pushes = pipeline_->stats().incremental_pushes;
  refresher.Start();
  scheduler_.RunUntilIdle();
  EXPECT_EQ(resolver_.calls["ledger.example.com"], 3) << "Start refreshes at once";
  scheduler_.AdvanceBy(absl::Seconds(30));
  EXPECT_EQ(resolver_.calls["ledger.example.com"], 4);
  EXPECT_EQ(pipeline_->stats().incremental_pushes, pushes);
  resolver_.table["ledger.example.com"] = std::vector<std::string>{"127.0.0.72"};
  scheduler_.AdvanceBy(absl::Seconds(30));
  scheduler_.AdvanceBy(absl::Seconds(1));  // the debounce, if any
  EXPECT_THAT(Endpoints("ledger.example.com", 8080), ::testing::ElementsAre("127.0.0.72:8080"));
  EXPECT_THAT(Endpoints("api.example.com", 8443), ::testing::ElementsAre("127.0.0.61:9443", "127.0.0.62:9443"));
  EXPECT_EQ(pipeline_->stats().incremental_pushes, pushes + 1);
  EXPECT_EQ(pipeline_->stats().full_pushes, 1u) << "an endpoint-only push";
}

TEST_F(DnsRefresherTest, AFailureKeepsTheLastAddressesAndARemovedNameIsForgotten) {
  DnsRefresher refresher({}, store_, model_, *pipeline_, resolver_, scheduler_);
  refresher.Refresh();
  resolver_.table["eu.api.example.com"] = absl::UnavailableError("timed out");
  EXPECT_TRUE(refresher.Refresh().configs.empty());
  EXPECT_THAT(Endpoints("api.example.com", 8443), ::testing::ElementsAre("127.0.0.61:9443", "127.0.0.62:9443"));

  // A name that no longer resolves, with no last addresses (a new refresher, as after a
  // restart): no endpoints, and its host is pushed.
  resolver_.table["eu.api.example.com"] = std::vector<std::string>{"127.0.0.61", "127.0.0.62"};
  resolver_.table.erase("ledger.example.com");
  DnsRefresher fresh({}, store_, model_, *pipeline_, resolver_, scheduler_);
  EXPECT_EQ(fresh.Refresh().configs.size(), 1u) << "ledger's addresses are gone: its host is pushed";
  EXPECT_THAT(Endpoints("ledger.example.com", 8080), ::testing::IsEmpty());

  // The config no longer names it: not resolved again.
  const ConfigStore::Update update = store_.ApplyFile("dns.yaml", "");
  model_.OnUpdate(update);
  const int calls = resolver_.calls["eu.api.example.com"];
  fresh.Refresh();
  EXPECT_EQ(resolver_.calls["eu.api.example.com"], calls);
  EXPECT_TRUE(NamesToResolve(*store_.Snapshot()).empty());
}

// The real resolver, on a name every machine resolves from /etc/hosts, with no network.
TEST(SystemNameResolverTest, LocalhostIsLoopbackIpv4First) {
  absl::StatusOr<std::vector<std::string>> addresses = SystemNameResolver()->Resolve("localhost");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  ASSERT_FALSE(addresses->empty());
  EXPECT_EQ(addresses->front(), "127.0.0.1");
  // (A failing name is not tried here: that would ask the machine's DNS server, a network.)
}

}  // namespace
}  // namespace cxds
