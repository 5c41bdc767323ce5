import CofferTestSupport
import Foundation
import Testing

@testable import Coffer

@Suite("S3 locations, credentials and the XML scanner")
struct S3ConfigurationTests {
    @Test("s3:// locations parse into bucket and prefix; bad ones are refused by name")
    func locations() throws {
        let location = try S3Location("s3://coffer-sync/team/laptops/")
        #expect(location.bucket == "coffer-sync")
        #expect(location.prefix == "team/laptops")
        #expect(location.key("a/head") == "team/laptops/a/head")
        #expect(try S3Location("s3://bucket").key("x") == "x")
        #expect(location.description == "s3://coffer-sync/team/laptops")
        for bad in ["https://bucket/x", "s3://", "s3://Upper", "s3://ab", "s3://-bucket/p", "s3://bu_cket"] {
            #expect(throws: CofferError.self, "\(bad)") { try S3Location(bad) }
        }
    }

    @Test("Credentials come from the AWS variables or a shared credentials file's profile")
    func credentials() throws {
        let fromEnvironment = try S3Credentials.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_DEFAULT_REGION": "eu-west-1",
        ])
        #expect(fromEnvironment.accessKeyID == "AKID")
        #expect(fromEnvironment.region == "eu-west-1")
        #expect(fromEnvironment.secretAccessKey.constantTimeEquals(Array("secret".utf8)))
        #expect(!"\(fromEnvironment)".contains("secret"))
        let missing = #expect(throws: CofferError.self) {
            try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A"])
        }
        #expect(missing?.message.contains("AWS_SECRET_ACCESS_KEY") == true)

        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("credentials")
        try """
        # comment
        [default]
        aws_access_key_id = DEFAULTKEY
        aws_secret_access_key = default-secret

        [profile backup]
        aws_access_key_id=BACKUPKEY
        aws_secret_access_key=backup-secret
        aws_session_token = token
        region = ap-south-1
        """.write(to: file, atomically: true, encoding: .utf8)
        #expect(try S3Credentials.load(file: file, profile: "default").accessKeyID == "DEFAULTKEY")
        let backup = try S3Credentials.load(file: file, profile: "backup")
        #expect(backup.accessKeyID == "BACKUPKEY")
        #expect(backup.sessionToken == "token")
        #expect(backup.region == "ap-south-1")
        let noProfile = #expect(throws: CofferError.self) { try S3Credentials.load(file: file, profile: "other") }
        #expect(noProfile?.message.contains("no profile 'other'") == true)
    }

    @Test("Remotes address AWS virtual-hosted and other stores path-style")
    func remotes() throws {
        let credentials = try S3Credentials(accessKeyID: "A", secretAccessKey: "s", region: "eu-central-1")
        let aws = S3Remote(try S3Location("s3://bucket/p"), credentials: credentials)
        #expect(aws.region == "eu-central-1")
        #expect(aws.endpoint.absoluteString == "https://s3.eu-central-1.amazonaws.com")
        #expect(aws.addressing == .virtualHosted)
        let local = S3Remote(
            try S3Location("s3://bucket/p"),
            credentials: credentials,
            endpoint: URL(string: "http://127.0.0.1:8333")!,
            region: "us-east-1"
        )
        #expect(local.addressing == .path)
        #expect(local.identity == "http://127.0.0.1:8333 s3://bucket/p")
    }

    @Test("The XML scanner reads list results, upload ids and errors, entities decoded")
    func xml() {
        let listing: Substring = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
            <Contents><Key>p/a&amp;b</Key><Size>12</Size></Contents><Contents><Key>p/c&#x41;&#66;</Key>
            <Size>0</Size></Contents><IsTruncated>true</IsTruncated>
            <NextContinuationToken>tok&lt;1&gt;</NextContinuationToken><Prefix/></ListBucketResult>
            """
        let contents = S3XML.elements("Contents", in: listing)
        #expect(contents.count == 2)
        #expect(S3XML.value("Key", in: contents[0]) == "p/a&b")
        #expect(S3XML.value("Key", in: contents[1]) == "p/cAB")
        #expect(S3XML.value("Size", in: contents[0]) == "12")
        #expect(S3XML.value("NextContinuationToken", in: listing) == "tok<1>")
        #expect(S3XML.value("Prefix", in: listing) == "")
        #expect(S3XML.value("Missing", in: listing) == nil)
        #expect(S3XML.value("Code", in: "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>") == "NoSuchKey")
        #expect(S3XML.escape("<a & 'b'>") == "&lt;a &amp; &apos;b&apos;&gt;")
    }
}
