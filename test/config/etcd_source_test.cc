// The etcd config source: key <-> object mapping and EtcdMirror's bookkeeping on their own,
// then EtcdClient and EtcdSource against a real etcd (test/fakes/etcd_process.h): paged reads
// at one revision, all-or-nothing transactions, a transaction as one batch, resuming after
// etcd is killed and restarted, and reading everything again after a compaction.
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status_matchers.h"
#include "config/etcd_source.h"
#include "fakes/etcd_process.h"
#include "fakes/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using testing::EtcdProcess;
using ::testing::HasSubstr;

std::string Doc(const std::string& name, int port) {
  return absl::StrCat("apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: ", name,
                      ", namespace: default}\nspec:\n  address: 127.0.0.1\n  ports: {grpc: ", port,
                      "}\n  labels: {app: x}\n");
}

std::string Key(const std::string& name) { return EtcdKeyFor("/mesh", {"WorkloadEntry", "default", name}); }

std::string Describe(const FileRead& read) {
  switch (read.state) {
    case FileRead::State::kPresent:
      return absl::StrCat("put ", read.path);
    case FileRead::State::kRemoved:
      return absl::StrCat("delete ", read.path);
    case FileRead::State::kUnreadable:
      return absl::StrCat("unreadable ", read.path);
  }
  return "";
}

std::vector<std::string> Describe(const std::vector<FileRead>& batch) {
  std::vector<std::string> out;
  for (const FileRead& read : batch) out.push_back(Describe(read));
  return out;
}

TEST(EtcdKeysTest, UrlPrefixAndKeyRoundTrip) {
  ASSERT_OK_AND_ASSIGN(EtcdLocation location, ParseEtcdUrl("etcd://127.0.0.1:2379/mesh/"));
  EXPECT_EQ(location.address, "127.0.0.1:2379");
  EXPECT_EQ(location.prefix, "/mesh");
  EXPECT_FALSE(ParseEtcdUrl("etcd://127.0.0.1:2379").ok());  // no prefix
  EXPECT_FALSE(ParseEtcdUrl("etcd://127.0.0.1:2379/").ok());
  EXPECT_FALSE(ParseEtcdUrl("http://127.0.0.1:2379/mesh").ok());
  EXPECT_FALSE(NormalizeEtcdPrefix("/a\nb").ok());
  EXPECT_EQ(*NormalizeEtcdPrefix("mesh"), "/mesh");

  const ConfigKey key{"ServiceEntry", "shop", "reviews"};
  EXPECT_EQ(EtcdKeyFor("/mesh", key), "/mesh/ServiceEntry/shop/reviews");
  ASSERT_OK_AND_ASSIGN(ConfigKey back, ConfigKeyFromEtcdKey("/mesh", "/mesh/ServiceEntry/shop/reviews"));
  EXPECT_EQ(back, key);
  for (const char* bad : {"/mesh/ServiceEntry/shop", "/mesh/ServiceEntry/shop/reviews/x", "/mesh//shop/reviews",
                          "/meshy/ServiceEntry/shop/reviews", "/mesh/ServiceEntry/shop/"}) {
    EXPECT_FALSE(ConfigKeyFromEtcdKey("/mesh", bad).ok()) << bad;
  }
}

TEST(EtcdMirrorTest, ReconcileDeliversOnlyTheDifference) {
  EtcdMirror mirror("/mesh");
  EtcdRangeResult first{10, {{Key("a"), Doc("a", 1), 5}, {Key("b"), Doc("b", 2), 6}, {"/mesh/stray", "x", 7}}};
  EXPECT_THAT(Describe(mirror.Reconcile(first)),
              ElementsAre("put /mesh/WorkloadEntry/default/a", "put /mesh/WorkloadEntry/default/b",
                          "unreadable /mesh/stray"));  // a key of another shape defines nothing
  EXPECT_EQ(mirror.revision(), 10);
  // After a compaction: a unchanged (same mod revision), b changed, the stray key gone, c new.
  EtcdRangeResult second{20, {{Key("a"), Doc("a", 1), 5}, {Key("b"), Doc("b", 3), 15}, {Key("c"), Doc("c", 4), 16}}};
  EXPECT_THAT(
      Describe(mirror.Reconcile(second)),
      ElementsAre("put /mesh/WorkloadEntry/default/b", "put /mesh/WorkloadEntry/default/c", "delete /mesh/stray"));
  EXPECT_EQ(mirror.revision(), 20);
  EXPECT_EQ(mirror.size(), 3u);
}

TEST(EtcdMirrorTest, ApplySkipsWhatWasDeliveredAndKeepsEachKeysLastEvent) {
  EtcdMirror mirror("/mesh");
  mirror.Reconcile(EtcdRangeResult{10, {{Key("a"), Doc("a", 1), 5}}});
  EtcdWatchBatch batch;
  batch.revision = 13;
  batch.events = {{Key("a"), Doc("a", 9), 9},   // at or below 10: already delivered by the read
                  {Key("b"), Doc("b", 1), 11},  // put, then deleted in the same batch
                  {Key("b"), std::nullopt, 12},
                  {Key("c"), Doc("c", 1), 12},
                  {Key("a"), std::nullopt, 13}};  // a deleted
  EXPECT_THAT(Describe(mirror.Apply(batch)),
              ElementsAre("delete /mesh/WorkloadEntry/default/a", "put /mesh/WorkloadEntry/default/c"));
  EXPECT_EQ(mirror.revision(), 13);
  // The same response again (a resumed watch that overlaps) changes nothing.
  EXPECT_TRUE(mirror.Apply(batch).empty());
  // A delete of a key never delivered is not passed on.
  EtcdWatchBatch unknown;
  unknown.events = {{Key("z"), std::nullopt, 14}};
  EXPECT_TRUE(mirror.Apply(unknown).empty());
  EXPECT_EQ(mirror.revision(), 14);
}

class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.Start()) << etcd_.Log(); }
  EtcdProcess etcd_{/*max_txn_ops=*/16};
};

TEST_F(EtcdTest, RangeReadsEveryPageAtOneRevision) {
  EtcdClient writer(etcd_.address());
  std::vector<EtcdWrite> writes;
  for (int i = 0; i < 7; ++i) writes.push_back({Key(absl::StrCat("w", i)), Doc("w", i)});
  ASSERT_OK_AND_ASSIGN(int64_t revision, writer.Commit(writes));
  ASSERT_OK(writer.Commit({{"/other/x", "outside the prefix"}, {"/mesh0", "outside too"}}).status());

  EtcdClient reader(etcd_.address(), EtcdClient::Options{.page_size = 2});
  ASSERT_OK_AND_ASSIGN(EtcdRangeResult range, reader.RangePrefix("/mesh"));
  ASSERT_EQ(range.kvs.size(), 7u);
  EXPECT_EQ(range.kvs.front().key, Key("w0"));
  EXPECT_EQ(range.kvs.back().key, Key("w6"));
  EXPECT_EQ(range.kvs.front().mod_revision, revision);  // one transaction, one revision
  // An older revision reads the state then, in pages too.
  ASSERT_OK(writer.Commit({{Key("w0"), std::nullopt}}).status());
  ASSERT_OK_AND_ASSIGN(EtcdRangeResult old, reader.RangePrefix("/mesh", revision));
  EXPECT_EQ(old.kvs.size(), 7u);
  ASSERT_OK_AND_ASSIGN(EtcdRangeResult now, reader.RangePrefix("/mesh"));
  EXPECT_EQ(now.kvs.size(), 6u);

  EtcdClient capped(etcd_.address(), EtcdClient::Options{.page_size = 2, .max_keys = 5});
  EXPECT_EQ(capped.RangePrefix("/mesh").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(EtcdTest, CommitIsAllOrNothing) {
  EtcdClient client(etcd_.address());
  std::vector<EtcdWrite> too_many;  // over --max-txn-ops: etcd refuses the whole transaction
  for (int i = 0; i < 20; ++i) too_many.push_back({Key(absl::StrCat("t", i)), Doc("t", i)});
  absl::StatusOr<int64_t> refused = client.Commit(too_many);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr(etcd_.address()));
  ASSERT_OK_AND_ASSIGN(EtcdRangeResult range, client.RangePrefix("/mesh"));
  EXPECT_TRUE(range.kvs.empty());
}

// Collects what a source delivers, for a test thread to wait on.
class Batches {
 public:
  ConfigSource::OnBatch Sink() {
    return [this](std::vector<FileRead> batch) {
      MutexLock lock(&mu_);
      batches_.push_back(Describe(batch));
    };
  }
  // The batches once there are at least `n` (or what there is after 15 s).
  std::vector<std::vector<std::string>> AwaitCount(size_t n) {
    MutexLock lock(&mu_);
    mu_.AwaitWithDeadline([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return batches_.size() >= n; },
                          absl::Now() + absl::Seconds(15));
    return batches_;
  }

 private:
  Mutex mu_;
  std::vector<std::vector<std::string>> batches_ ABSL_GUARDED_BY(mu_);
};

SourceStatus AwaitStatus(const EtcdSource& source, bool connected, int64_t min_revision = 0) {
  for (const absl::Time deadline = absl::Now() + absl::Seconds(15); absl::Now() < deadline;) {
    SourceStatus status = source.status();
    if (status.connected == connected && status.revision >= min_revision) return status;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return source.status();
}

EtcdSource::Options FastRetry() {
  EtcdSource::Options options;
  options.min_backoff = absl::Milliseconds(50);
  options.max_backoff = absl::Milliseconds(500);
  return options;
}

TEST_F(EtcdTest, LoadsThenDeliversEachTransactionAsOneBatch) {
  EtcdClient client(etcd_.address());
  ASSERT_OK_AND_ASSIGN(int64_t loaded_at, client.Commit({{Key("a"), Doc("a", 1)}}));
  EtcdSource source({etcd_.address(), "/mesh"}, FastRetry());
  ASSERT_OK_AND_ASSIGN(std::vector<FileRead> initial, source.Load());
  EXPECT_THAT(Describe(initial), ElementsAre("put /mesh/WorkloadEntry/default/a"));
  EXPECT_EQ(initial.front().content, Doc("a", 1));
  EXPECT_GE(source.status().revision, loaded_at);

  Batches batches;
  ASSERT_OK(source.Start(batches.Sink()));
  ASSERT_OK_AND_ASSIGN(int64_t changed_at,
                       client.Commit({{Key("a"), std::nullopt}, {Key("b"), Doc("b", 2)}, {Key("c"), Doc("c", 3)}}));
  EXPECT_THAT(batches.AwaitCount(1),
              ElementsAre(ElementsAre("delete /mesh/WorkloadEntry/default/a", "put /mesh/WorkloadEntry/default/b",
                                      "put /mesh/WorkloadEntry/default/c")));
  SourceStatus status = AwaitStatus(source, true, changed_at);
  EXPECT_EQ(status.revision, changed_at);
  source.Stop();
}

TEST_F(EtcdTest, ResumesFromTheLastRevisionAfterEtcdComesBack) {
  EtcdClient client(etcd_.address());
  ASSERT_OK(client.Commit({{Key("a"), Doc("a", 1)}}).status());
  EtcdSource source({etcd_.address(), "/mesh"}, FastRetry());
  ASSERT_OK(source.Load().status());
  Batches batches;
  ASSERT_OK(source.Start(batches.Sink()));
  ASSERT_OK_AND_ASSIGN(int64_t before_outage, client.Commit({{Key("b"), Doc("b", 1)}}));
  ASSERT_EQ(batches.AwaitCount(1).size(), 1u);

  etcd_.Stop();
  SourceStatus down = AwaitStatus(source, false);
  EXPECT_FALSE(down.connected);
  EXPECT_THAT(down.detail, HasSubstr(etcd_.address()));
  EXPECT_EQ(down.revision, before_outage);  // what was delivered stays

  ASSERT_TRUE(etcd_.Start()) << etcd_.Log();
  ASSERT_OK_AND_ASSIGN(int64_t after_outage, client.Commit({{Key("c"), Doc("c", 1)}}));
  EXPECT_EQ(AwaitStatus(source, true, after_outage).revision, after_outage);
  // Exactly one more batch: c. Nothing delivered before the outage came again.
  EXPECT_THAT(batches.AwaitCount(2), ElementsAre(ElementsAre("put /mesh/WorkloadEntry/default/b"),
                                                 ElementsAre("put /mesh/WorkloadEntry/default/c")));
  source.Stop();
}

TEST_F(EtcdTest, AfterACompactionReadsEverythingAndDeliversTheDifference) {
  EtcdClient client(etcd_.address());
  ASSERT_OK(
      client
          .Commit({{Key("keep"), Doc("keep", 1)}, {Key("change"), Doc("change", 1)}, {Key("remove"), Doc("remove", 1)}})
          .status());
  EtcdSource source({etcd_.address(), "/mesh"}, FastRetry());
  ASSERT_OK(source.Load().status());
  // Before the source watches, history moves on and is compacted away: its watch from the
  // loaded revision + 1 is refused as compacted.
  ASSERT_OK(client.Commit({{Key("change"), Doc("change", 2)}}).status());
  ASSERT_OK(client.Commit({{Key("remove"), std::nullopt}}).status());
  ASSERT_OK(client.Commit({{Key("add"), Doc("add", 1)}}).status());
  ASSERT_OK_AND_ASSIGN(int64_t newest, client.Commit({{Key("change"), Doc("change", 3)}}));
  ASSERT_OK(client.Compact(newest));

  Batches batches;
  ASSERT_OK(source.Start(batches.Sink()));
  // One batch with the net difference: the intermediate version of "change" never appears.
  EXPECT_THAT(batches.AwaitCount(1),
              ElementsAre(ElementsAre("put /mesh/WorkloadEntry/default/add", "put /mesh/WorkloadEntry/default/change",
                                      "delete /mesh/WorkloadEntry/default/remove")));
  EXPECT_EQ(AwaitStatus(source, true, newest).revision, newest);
  // And the watch goes on from there.
  ASSERT_OK_AND_ASSIGN(int64_t later, client.Commit({{Key("later"), Doc("later", 1)}}));
  EXPECT_EQ(batches.AwaitCount(2).size(), 2u);
  EXPECT_EQ(AwaitStatus(source, true, later).revision, later);
  source.Stop();
}

TEST_F(EtcdTest, AWatchResponseTooLargeToTakeIsReadAgainInPages) {
  EtcdSource::Options options = FastRetry();
  options.client.max_message_bytes = 64 << 10;  // a 120 KiB transaction cannot arrive whole
  EtcdSource source({etcd_.address(), "/mesh"}, options);
  ASSERT_OK(source.Load().status());
  Batches batches;
  ASSERT_OK(source.Start(batches.Sink()));
  EtcdClient client(etcd_.address());
  std::vector<EtcdWrite> big;
  for (int i = 0; i < 4; ++i) {
    // A valid document padded with a 30 KiB comment: the store must still accept it.
    big.push_back({Key(absl::StrCat("big", i)), absl::StrCat("# ", std::string(30 << 10, 'x'), "\n", Doc("big", i))});
  }
  ASSERT_OK_AND_ASSIGN(int64_t revision, client.Commit(big));
  EXPECT_THAT(batches.AwaitCount(1),
              ElementsAre(ElementsAre("put /mesh/WorkloadEntry/default/big0", "put /mesh/WorkloadEntry/default/big1",
                                      "put /mesh/WorkloadEntry/default/big2", "put /mesh/WorkloadEntry/default/big3")));
  EXPECT_EQ(AwaitStatus(source, true, revision).revision, revision);
  source.Stop();
}

TEST(EtcdTlsTest, FilesAreCheckedAndNamed) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("client", "ca", "URI:spiffe://cluster.local/ns/cxds/sa/cxds"));
  EXPECT_FALSE(ReadEtcdTls("", "", "")->has_value());  // plaintext
  EXPECT_THAT(std::string(ReadEtcdTls("", pki.Path("client.crt"), pki.Path("client.key")).status().message()),
              HasSubstr("need --etcd-ca"));
  EXPECT_THAT(std::string(ReadEtcdTls(pki.Path("ca.crt"), pki.Path("client.crt"), "").status().message()),
              HasSubstr("go together"));
  EXPECT_THAT(std::string(ReadEtcdTls(pki.Path("missing.pem"), "", "").status().message()), HasSubstr("missing.pem"));
  ASSERT_OK_AND_ASSIGN(std::optional<EtcdTls> tls,
                       ReadEtcdTls(pki.Path("ca.crt"), pki.Path("client.crt"), pki.Path("client.key")));
  ASSERT_TRUE(tls.has_value());
  EXPECT_THAT(tls->cert_pem, HasSubstr("-----BEGIN CERTIFICATE-----"));
}

// etcd with TLS and --client-cert-auth: the source reads and watches with the CA and a client
// certificate, and is refused without the certificate or without TLS.
TEST(EtcdTlsTest, TheSourceSpeaksTlsWithAClientCertificate) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("etcd", "ca", "IP:127.0.0.1"));
  ASSERT_TRUE(pki.MakeLeaf("client", "ca", "URI:spiffe://cluster.local/ns/cxds/sa/cxds"));
  ASSERT_OK_AND_ASSIGN(std::optional<EtcdTls> tls,
                       ReadEtcdTls(pki.Path("ca.crt"), pki.Path("client.crt"), pki.Path("client.key")));
  EtcdClient::Options with_tls;
  with_tls.tls = tls;
  EtcdProcess etcd(16, EtcdProcess::Tls{pki.Path("etcd.crt"), pki.Path("etcd.key"), pki.Path("ca.crt"), with_tls});
  ASSERT_TRUE(etcd.Start()) << etcd.Log();

  EtcdClient writer(etcd.address(), with_tls);
  ASSERT_OK(writer.Commit({{Key("a"), Doc("a", 1)}}).status());
  EtcdSource::Options source_options = FastRetry();
  source_options.client = with_tls;
  EtcdSource source({etcd.address(), "/mesh"}, source_options);
  ASSERT_OK_AND_ASSIGN(std::vector<FileRead> initial, source.Load());
  EXPECT_THAT(Describe(initial), ElementsAre("put /mesh/WorkloadEntry/default/a"));
  Batches batches;
  ASSERT_OK(source.Start(batches.Sink()));
  ASSERT_OK(writer.Commit({{Key("b"), Doc("b", 1)}}).status());
  EXPECT_THAT(batches.AwaitCount(1), ElementsAre(ElementsAre("put /mesh/WorkloadEntry/default/b")));
  source.Stop();

  EtcdClient::Options no_certificate;
  no_certificate.deadline = absl::Seconds(2);
  no_certificate.tls = EtcdTls{tls->ca_pem, "", ""};
  EXPECT_FALSE(EtcdClient(etcd.address(), no_certificate).RangePrefix("/mesh").ok());
  EXPECT_FALSE(EtcdClient(etcd.address(), EtcdClient::Options{.deadline = absl::Seconds(2)}).RangePrefix("/mesh").ok());
}

TEST(EtcdSourceTest, LoadFailsWhenEtcdCannotBeReached) {
  EtcdSource source({absl::StrCat("127.0.0.1:", testing::PickLoopbackPort()), "/mesh"},
                    EtcdSource::Options{.client = {.deadline = absl::Seconds(1)}});
  absl::StatusOr<std::vector<FileRead>> load = source.Load();
  EXPECT_EQ(load.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(source.status().connected);
}

}  // namespace
}  // namespace cxds
