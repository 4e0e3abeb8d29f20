// The job token: where it comes from (explicit, file, GRADWIRE_TOKEN, GRADWIRE_JOB_TOKEN, in that
// order), the errors when it is missing, a token file others may read, and the comparison.
#include "rpc/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

using ::testing::HasSubstr;

// A token file of mode 0600 (mkstemp's), removed at the end.
class TokenFile {
 public:
  explicit TokenFile(const std::string& content) {
    char pattern[] = "/tmp/gradwire_token_XXXXXX";
    const int fd = mkstemp(pattern);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = pattern;
    std::ofstream(path_) << content;
  }
  ~TokenFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LoadToken, SourcesAreTriedInOrder) {
  const TokenFile file("from-file\n");
  const EnvMap env{{"GRADWIRE_TOKEN", "from-env"}, {"GRADWIRE_JOB_TOKEN", "from-job"}};
  EXPECT_EQ(load_token("explicit", file.path(), env), "explicit");
  EXPECT_EQ(load_token("", file.path(), env), "from-file");
  EXPECT_EQ(load_token("", "", env), "from-env");
  EXPECT_EQ(load_token("", "", EnvMap{{"GRADWIRE_JOB_TOKEN", "from-job"}}), "from-job");
  EXPECT_EQ(load_token("", "", EnvMap{{"GRADWIRE_TOKEN", ""}, {"GRADWIRE_JOB_TOKEN", "j"}}), "j");
}

TEST(LoadToken, FileContentLosesTrailingWhitespaceOnly) {
  const TokenFile file("  a b\t\r\n\n");
  EXPECT_EQ(load_token("", file.path(), {}), "  a b");
}

TEST(LoadToken, MissingTokenNamesEverySource) {
  try {
    load_token("", "", EnvMap{{"GRADWIRE_TOKEN", ""}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    for (const char* source : {"explicit", "token file", "GRADWIRE_TOKEN", "GRADWIRE_JOB_TOKEN"}) {
      EXPECT_NE(message.find(source), std::string::npos) << source << " in: " << message;
    }
  }
}

TEST(LoadToken, UnreadableOrEmptyFileIsNamed) {
  try {
    load_token("", "/nonexistent/gradwire/token", EnvMap{{"GRADWIRE_TOKEN", "x"}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/gradwire/token"), std::string::npos);
  }
  const TokenFile empty(" \n");
  try {
    load_token("", empty.path(), {});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("empty"), std::string::npos) << error.what();
  }
}

// As ssh refuses a private key others can read, a token file must be the owner's alone.
TEST(LoadToken, AFileGroupOrOthersCanReadOrWriteIsRefused) {
  const TokenFile file("secret\n");
  for (const mode_t mode : {0644, 0640, 0604, 0620, 0602, 0660, 0666, 0700 | 0044}) {
    ASSERT_EQ(::chmod(file.path().c_str(), mode), 0);
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode));
    try {
      load_token("", file.path(), {});
      FAIL() << "a token file of mode " << octal << " was read";
    } catch (const ConfigError& error) {
      EXPECT_THAT(error.what(), HasSubstr("'" + file.path() + "'"));
      EXPECT_THAT(error.what(), HasSubstr(std::string("mode ") + octal));
      EXPECT_THAT(error.what(), HasSubstr("chmod 600 " + file.path()));
    }
  }
  for (const mode_t mode : {0600, 0400, 0700}) {
    ASSERT_EQ(::chmod(file.path().c_str(), mode), 0);
    EXPECT_EQ(load_token("", file.path(), {}), "secret") << std::oct << mode;
  }
  // An explicit token wins before the file is looked at.
  ASSERT_EQ(::chmod(file.path().c_str(), 0644), 0);
  EXPECT_EQ(load_token("explicit", file.path(), {}), "explicit");
}

TEST(LoadToken, AFileOfAnotherUserIsRefused) {
  const TokenFile file("secret\n");
  // Giving the file away needs root (or CAP_CHOWN); 65534 is "nobody".
  if (::chown(file.path().c_str(), 65534, static_cast<gid_t>(-1)) != 0) {
    GTEST_SKIP() << "cannot give a file to another user here";
  }
  try {
    load_token("", file.path(), {});
    FAIL() << "a token file of another user was read";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), HasSubstr("belongs to uid 65534"));
  }
}

TEST(TokensEqual, ComparesWholeStrings) {
  EXPECT_TRUE(tokens_equal("secret", "secret"));
  EXPECT_TRUE(tokens_equal("", ""));
  EXPECT_FALSE(tokens_equal("secret", "secreT"));
  EXPECT_FALSE(tokens_equal("Secret", "secret"));
  EXPECT_FALSE(tokens_equal("secret", "secret2"));
  EXPECT_FALSE(tokens_equal("secret2", "secret"));
  EXPECT_FALSE(tokens_equal("", "x"));
  EXPECT_FALSE(tokens_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
  // A prefix padded with the zero bytes used to pad the shorter string is still different.
  EXPECT_FALSE(tokens_equal(std::string("ab\0", 3), "ab"));
}

TEST(AuthorizationValue, IsABearerToken) { EXPECT_EQ(authorization_value("t0k"), "Bearer t0k"); }

}  // namespace
}  // namespace gradwire::rpc
