#include "zcal/calibrator/samples_csv.h"

#include "zcal/calibrator/depth.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace zcal::calibrator::samples_csv_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ErrorOf(std::string_view text) {
  auto r = ParseSamplesCsv(text, "in.csv");
  EXPECT_FALSE(r.has_value()) << "parsed: " << text;
  return r ? std::string() : r.error().message;
}

TEST(ParseSamplesCsv, ReadsRequiredColumnsInAnyOrder) {
  auto r = ParseSamplesCsv(
      "cpu_pct,size,comment,method,mb_per_s\n"
      "50,4096,warm,copy,1000\n"
      "25,4K,,msg_zerocopy,2000.5\n",
      "in.csv");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].method, Method::kCopy);
  EXPECT_EQ((*r)[0].size_bytes, 4096u);
  EXPECT_EQ((*r)[0].path, "default");
  EXPECT_DOUBLE_EQ((*r)[1].ThroughputBytesPerSecond(), 2000.5e6);
  EXPECT_EQ((*r)[1].size_bytes, 4096u);
  EXPECT_NEAR((*r)[1].CpuNsPerByte(), 0.25e9 / 2000.5e6, 1e-12);
}

TEST(ParseSamplesCsv, ReadsOptionalColumns) {
  auto r = ParseSamplesCsv(
      "path,method,size,mb_per_s,cpu_pct,copied_pct,repeat\n"
      "\"peer, rack 2\",msg_zerocopy,65536,9000,40,100,3\n"
      "\"peer, rack 2\",copy,65536,9000,100,,0\n",
      "in.csv");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].path, "peer, rack 2");
  EXPECT_EQ((*r)[0].repeat, 3u);
  EXPECT_DOUBLE_EQ((*r)[0].CopiedFraction().value_or(-1), 1.0);
  EXPECT_FALSE((*r)[1].CopiedFraction().has_value());
}

TEST(ParseSamplesCsv, SkipsBlankAndCommentLinesAndHandlesCrlf) {
  auto r = ParseSamplesCsv(
      "# from a benchmark run\r\nmethod,size,mb_per_s,cpu_pct\r\n\r\n"
      "copy,1024,100,10\r\n",
      "in.csv");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 1u);
}

TEST(ParseSamplesCsv, RejectsEmptyFile) {
  EXPECT_THAT(ErrorOf(""), StartsWith("in.csv:1:1: empty file"));
  EXPECT_THAT(ErrorOf("\n\n# only a comment\n"), HasSubstr("empty file"));
}

TEST(ParseSamplesCsv, RejectsMissingColumnNamingIt) {
  EXPECT_THAT(ErrorOf("method,size,mb_per_s\ncopy,1,2\n"),
              AllOf(StartsWith("in.csv:1:1: missing column 'cpu_pct'"),
                    HasSubstr("found: method,size,mb_per_s")));
}

TEST(ParseSamplesCsv, RejectsDataWithoutHeader) {
  EXPECT_THAT(ErrorOf("copy,4096,1000,50\n"), HasSubstr("missing column"));
}

TEST(ParseSamplesCsv, RejectsNonNumberWithLineAndColumn) {
  EXPECT_EQ(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,fast,50\n"),
            "in.csv:2:11: 'fast' in column mb_per_s is not a number; expected "
            "megabytes per second (10^6 bytes/s), e.g. 1234.5");
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,10,nan\n"),
              StartsWith("in.csv:2:14: 'nan' in column cpu_pct is not a number"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,,50\n"),
              StartsWith("in.csv:2:11: empty mb_per_s"));
}

TEST(ParseSamplesCsv, RejectsZeroOrNegativeSize) {
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,0,10,5\n"),
              StartsWith("in.csv:2:6: size 0 must be a positive number of bytes"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,-4096,10,5\n"),
              HasSubstr("'-4096' is not a size"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,1.5,10,5\n"),
              HasSubstr("'1.5' is not a whole number of bytes"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,big,10,5\n"),
              StartsWith("in.csv:2:6: column size: 'big' is not a size"));
}

TEST(ParseSamplesCsv, RejectsUnknownMethodListingTheKnownOnes) {
  EXPECT_EQ(ErrorOf("method,size,mb_per_s,cpu_pct\nsendfile,4096,10,5\n"),
            "in.csv:2:1: unknown method 'sendfile'; expected one of copy, "
            "msg_zerocopy, uring_send, uring_send_zc, uring_send_zc_fixed");
}

TEST(ParseSamplesCsv, RejectsTablesWithoutBaseline) {
  EXPECT_THAT(
      ErrorOf("size,method,mb_per_s,cpu_pct\n4096,msg_zerocopy,10,5\n"),
      StartsWith("in.csv:1:6: no baseline rows; expected successful rows of "
                 "method copy or uring_send"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\n"),
              HasSubstr("no data rows"));
}

TEST(ParseSamplesCsv, RejectsBinaryData) {
  const std::string with_nul("method,size\0,mb_per_s", 21);
  EXPECT_THAT(ErrorOf(with_nul),
              StartsWith("in.csv:1:12: binary data (byte 0x00 at byte offset 11)"));
  EXPECT_THAT(ErrorOf("\x7f" "ELF\x02\x01\x01\xff\xfe"),
              HasSubstr("binary data"));
}

TEST(ParseSamplesCsv, NamesTheOffsetAndTheBytesOfInvalidUtf8) {
  // 0xc3 begins a 2-byte sequence; the printable 's' after it is where the
  // sequence breaks, not binary data.
  EXPECT_EQ(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,1\xC3s,5\n"),
            "in.csv:2:12: invalid UTF-8 at byte offset 40: the bytes 0xc3 0x73 are not a "
            "UTF-8 sequence (0xc3 begins one of 2 bytes, 0x73 cannot be its 2nd); expected "
            "CSV text in UTF-8");
  // The offset counts a byte order mark and the LF of a CRLF.
  EXPECT_THAT(ErrorOf("\xEF\xBB\xBFmethod,size,mb_per_s,cpu_pct\r\npath \xE2\x82x"),
              StartsWith("in.csv:2:6: invalid UTF-8 at byte offset 38: the bytes 0xe2 0x82 "
                         "0x78 are not a UTF-8 sequence (0xe2 begins one of 3 bytes, 0x78 "
                         "cannot be its 3rd)"));
  EXPECT_THAT(ErrorOf("m\xFF" "ethod"),
              StartsWith("in.csv:1:2: invalid UTF-8 at byte offset 1: the byte 0xff begins "
                         "no UTF-8 sequence"));
  EXPECT_THAT(ErrorOf("m\x80"), HasSubstr("the byte 0x80 begins no UTF-8 sequence"));
}

TEST(ParseSamplesCsv, RefusesOverlongSurrogateAndOutOfRangeSequences) {
  EXPECT_THAT(ErrorOf("a\xE0\x80\xAF"),  // '/' in 3 bytes
              HasSubstr("the bytes 0xe0 0x80 are not a UTF-8 sequence"));
  EXPECT_THAT(ErrorOf("a\xED\xA0\x80"),  // U+D800
              HasSubstr("the bytes 0xed 0xa0 are not a UTF-8 sequence"));
  EXPECT_THAT(ErrorOf("a\xF0\x8F\xBF\xBF"),  // overlong U+FFFF
              HasSubstr("the bytes 0xf0 0x8f are not a UTF-8 sequence"));
  EXPECT_THAT(ErrorOf("a\xF4\x90\x80\x80"),  // U+110000
              HasSubstr("the bytes 0xf4 0x90 are not a UTF-8 sequence"));
  // The limits themselves are text.
  const std::string text =
      "method,size,mb_per_s,cpu_pct,path\ncopy,4096,10,5,\xE0\xA0\x80\xED\x9F\xBF"
      "\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\n";
  const Result<std::vector<Sample>> ok = ParseSamplesCsv(text, "in.csv");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->front().path, "\xE0\xA0\x80\xED\x9F\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
}

TEST(ParseSamplesCsv, RefusesAHeaderOfMoreColumnsThanTheLimitNamingIt) {
  // A million empty columns in under 1 MiB: refused at the first column past
  // the limit, before its fields take memory.
  const std::string wide = std::string(1'000'000 - 1, ',') + "\n";
  EXPECT_EQ(ErrorOf(wide),
            "in.csv:1:4097: a header of more than 4096 columns; at most 4096 are read, of "
            "which samples need method, size, mb_per_s and cpu_pct");
  std::string header = "method,size,mb_per_s,cpu_pct";
  for (int i = 4; i < 4096; ++i) header += ",x" + std::to_string(i);
  std::string row = "copy,4096,10,5";
  for (int i = 4; i < 4096; ++i) row += ",";
  EXPECT_TRUE(ParseSamplesCsv(header + "\n" + row + "\n", "in.csv")) << "4096 are read";
  EXPECT_THAT(ErrorOf(header + ",x\n"),
              StartsWith("in.csv:1:" + std::to_string(header.size() + 2) +
                         ": a header of more than 4096 columns"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,10,5" + std::string(5000, ',')),
              StartsWith("in.csv:2:4108: a row of more than 4096 fields"));
}

TEST(ParseSamplesCsv, ListsABoundedPartOfAHeaderWithoutTheRequiredColumns) {
  std::string header;
  for (int i = 0; i < 1000; ++i) header += (i ? ",c" : "c") + std::to_string(i);
  const std::string message = ErrorOf(header + "\n");
  EXPECT_THAT(message, HasSubstr("(found: c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12,c13,"
                                 "c14,c15,... (984 more))"));
  EXPECT_LT(message.size(), 400u);
}

TEST(ParseSamplesCsv, RejectsShortRowsAndBadQuotes) {
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,4096,10\n"),
              StartsWith("in.csv:2:13: expected 4 fields as in the header, "
                         "found 3"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\n\"copy,4096,10,5\n"),
              StartsWith("in.csv:2:1: unterminated quoted field"));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct\n\"copy\"x,4096,10,5\n"),
              StartsWith("in.csv:2:7: unexpected text after a quoted field"));
}

TEST(ParseSamplesCsv, RejectsOutOfRangeCopiedShare) {
  EXPECT_THAT(
      ErrorOf("method,size,mb_per_s,cpu_pct,copied_pct\ncopy,1,10,5,150\n"),
      HasSubstr("copied_pct must be a percentage from 0 to 100"));
}

TEST(SamplesCsvReader, AnyChunkingGivesTheSameSamples) {
  const std::string text =
      "\xEF\xBB\xBFpath,method,size,mb_per_s,cpu_pct\r\n"
      "# a comment\r\n"
      "\"peer, \"\"rack\"\"\n2\",copy,4K,1000,50\r\n"
      "\"p\xC3\xA9" "er\",msg_zerocopy,4096,2000,25\n"
      "default,copy,8K,1500,40";  // no line end at the end
  const Result<std::vector<Sample>> whole = ParseSamplesCsv(text, "in.csv");
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_EQ(whole->size(), 3u);
  EXPECT_EQ((*whole)[0].path, "peer, \"rack\"\n2");
  EXPECT_EQ((*whole)[1].path, "p\xC3\xA9" "er");
  EXPECT_EQ((*whole)[2].size_bytes, 8192u);
  for (std::size_t chunk = 1; chunk <= 7; ++chunk) {
    SamplesCsvReader reader("in.csv");
    for (std::size_t i = 0; i < text.size(); i += chunk) {
      ASSERT_TRUE(reader.Feed(std::string_view(text).substr(i, chunk)));
    }
    const Result<std::vector<Sample>> pieces = reader.Finish();
    ASSERT_TRUE(pieces) << pieces.error().message;
    ASSERT_EQ(pieces->size(), whole->size()) << chunk;
    for (std::size_t k = 0; k < whole->size(); ++k) {
      EXPECT_EQ((*pieces)[k].path, (*whole)[k].path) << chunk;
      EXPECT_EQ((*pieces)[k].bytes, (*whole)[k].bytes) << chunk;
    }
  }
}

TEST(SamplesCsvReader, KeepsABoundedUniformSubsetPerGroup) {
  SamplesCsvLimits limits;
  limits.max_samples_per_group = 16;
  SamplesCsvReader reader("long.csv", limits);
  ASSERT_TRUE(reader.Feed("method,size,mb_per_s,cpu_pct\n"));
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(reader.Feed("copy,4096," + std::to_string(1 + i) + ",50\n"));
    ASSERT_TRUE(reader.Feed("msg_zerocopy,4096,10,50\n"));
  }
  EXPECT_EQ(reader.rows(), 20'000u);
  EXPECT_EQ(reader.groups(), 2u);
  const Result<std::vector<Sample>> samples = reader.Finish();
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_EQ(samples->size(), 32u);
  // Drawn from the whole file, not its first rows: the median of the kept
  // copy rates is near the middle of 1..10000 MB/s.
  std::vector<double> rates;
  for (const Sample& s : *samples) {
    if (s.method == Method::kCopy) rates.push_back(s.ThroughputBytesPerSecond() / 1e6);
  }
  std::sort(rates.begin(), rates.end());
  EXPECT_GT(rates[rates.size() / 2], 2000);
  EXPECT_LT(rates[rates.size() / 2], 8000);
  // The same file gives the same subset.
  SamplesCsvReader again("long.csv", limits);
  ASSERT_TRUE(again.Feed("method,size,mb_per_s,cpu_pct\n"));
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(again.Feed("copy,4096," + std::to_string(1 + i) + ",50\n"));
    ASSERT_TRUE(again.Feed("msg_zerocopy,4096,10,50\n"));
  }
  const Result<std::vector<Sample>> repeated = again.Finish();
  ASSERT_TRUE(repeated);
  for (std::size_t k = 0; k < samples->size(); ++k) {
    EXPECT_EQ((*repeated)[k].bytes, (*samples)[k].bytes);
  }
}

TEST(SamplesCsvReader, RefusesARecordOverItsCapAndTruncatedText) {
  SamplesCsvLimits limits;
  limits.max_record_bytes = 64;
  SamplesCsvReader reader("x.csv", limits);
  const Result<void> fed = reader.Feed("method,size,mb_per_s,cpu_pct\n" + std::string(100, 'a'));
  ASSERT_FALSE(fed);
  EXPECT_THAT(fed.error().message, StartsWith("x.csv:2:1: a record longer than 64 B"));
  EXPECT_FALSE(reader.Feed("more")) << "the first error ends the input";
  EXPECT_EQ(ErrorOf("method,size,mb_per_s,cpu_pct\ncopy,1,2,\xE2\x82"),
            "in.csv:2:10: a truncated UTF-8 sequence at the end: the bytes 0xe2 0x82 at byte "
            "offset 38 begin one of 3 bytes; expected CSV text in UTF-8");
}

TEST(WriteSamplesCsv, RoundTripsEverySampleField) {
  Sample ok;
  ok.path = "peer \"a\", rack 2";
  ok.method = Method::kUringSendZcFixed;
  ok.size_bytes = 12288;
  ok.repeat = 4;
  ok.bytes = 123456789;
  ok.wall_ns = 100000007;
  ok.cpu_ns = 55555555;
  ok.host_cpu_ns = 99999999;
  ok.zc_completions = 1000;
  ok.zc_copied = 999;
  ok.enobufs = 12;
  ok.depth = 4;
  ok.seq = 17;
  Sample unsupported;
  unsupported.method = Method::kUringSendZc;
  unsupported.size_bytes = 1024;
  unsupported.status = SampleStatus::kUnsupported;
  unsupported.error = "io_uring_setup: Operation not permitted, seccomp";
  Sample base = ok;
  base.method = Method::kUringSend;
  base.host_cpu_ns.reset();
  base.zc_completions = base.zc_copied = 0;

  const std::vector<Sample> samples = {ok, unsupported, base};
  auto parsed = ParseSamplesCsv(WriteSamplesCsv(samples), "out.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& a = samples[i];
    const Sample& b = (*parsed)[i];
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.size_bytes, b.size_bytes);
    EXPECT_EQ(a.repeat, b.repeat);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.wall_ns, b.wall_ns);
    EXPECT_EQ(a.cpu_ns, b.cpu_ns);
    EXPECT_EQ(a.host_cpu_ns, b.host_cpu_ns);
    EXPECT_EQ(a.zc_completions, b.zc_completions);
    EXPECT_EQ(a.zc_copied, b.zc_copied);
    EXPECT_EQ(a.enobufs, b.enobufs);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.depth, b.depth);
    EXPECT_EQ(a.seq, b.seq);
  }
}

TEST(ParseSamplesCsv, ReadsTheProbeOrderAndAbsentMeansUnknown) {
  auto r = ParseSamplesCsv(
      "method,size,mb_per_s,cpu_pct,seq\n"
      "copy,65536,9000,50,12\n"
      "msg_zerocopy,65536,9000,35,\n",
      "in.csv");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].seq, std::optional<std::uint64_t>(12));
  EXPECT_FALSE((*r)[1].seq.has_value());
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct,seq\ncopy,1024,100,10,first\n"),
              AllOf(StartsWith("in.csv:2:"), HasSubstr("'first'"), HasSubstr("seq")));
  EXPECT_THAT(ErrorOf("method,size,mb_per_s,cpu_pct,seq\ncopy,1024,100,10,-1\n"),
              HasSubstr("'-1'"));
}

TEST(ParseSamplesCsv, ReadsTheDepthColumnAndAbsentMeansStream) {
  auto r = ParseSamplesCsv(
      "method,size,mb_per_s,cpu_pct,depth\n"
      "msg_zerocopy,65536,9000,40,1\n"
      "msg_zerocopy,65536,9000,35,stream\n"
      "copy,65536,9000,50,\n",
      "in.csv");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].depth, 1u);
  EXPECT_EQ((*r)[1].depth, kStreamDepth);
  EXPECT_EQ((*r)[2].depth, kStreamDepth);
  auto without = ParseSamplesCsv("method,size,mb_per_s,cpu_pct\ncopy,1024,100,10\n", "in.csv");
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_EQ((*without)[0].depth, kStreamDepth);
}

TEST(ParseSamplesCsv, RefusesAGarbageDepthWithLineAndColumn) {
  const std::string head = "method,size,mb_per_s,cpu_pct,depth\ncopy,1024,100,10,stream\n";
  EXPECT_THAT(ErrorOf(head + "msg_zerocopy,1024,100,10,0\n"),
              AllOf(StartsWith("in.csv:3:"), HasSubstr("'0'"), HasSubstr("depth")));
  EXPECT_THAT(ErrorOf(head + "msg_zerocopy,1024,100,10,deep\n"),
              AllOf(StartsWith("in.csv:3:"), HasSubstr("'deep'")));
  EXPECT_THAT(ErrorOf(head + "msg_zerocopy,1024,100,10,-4\n"), HasSubstr("'-4'"));
  EXPECT_THAT(ErrorOf(head + "msg_zerocopy,1024,100,10,4096\n"), HasSubstr("out of range"));
}

}  // namespace
}  // namespace zcal::calibrator::samples_csv_test
