// The Debian package (issue 15, packaging): cpack builds it from this build, it unpacks into a
// scratch root (dpkg-deb -x), its Depends come from dpkg-shlibdeps, and what it installed runs
// from there: `myelin --version`, `myelin check` on an installed example, the installed example
// plugin found beside the installed core, the man page and bash completion generated from the
// CLI's description, the studio's libraries all resolved.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

namespace {

struct Result {
    int code = -1;
    QString out;
};

// Runs `program` with a clean environment (no plugin path, a scratch HOME), 5 minutes at most.
Result run(const QString& program, const QStringList& args, const QString& home,
           const QString& workDir = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("MYELIN_PLUGIN_PATH"));
    env.remove(QStringLiteral("LD_LIBRARY_PATH"));
    env.insert(QStringLiteral("HOME"), home);
    env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/data"));
    p.setProcessEnvironment(env);
    p.setProcessChannelMode(QProcess::MergedChannels);
    if (!workDir.isEmpty()) p.setWorkingDirectory(workDir);
    p.start(program, args);
    if (!p.waitForFinished(5 * 60 * 1000)) {
        p.kill();
        p.waitForFinished();
        return {-1, QStringLiteral("timed out: ") + program};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromLocal8Bit(p.readAll())};
}

} // namespace

class TestPackage : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void packageDescribesItself();
    void installedCliRuns();
    void installedFilesAreThere();
    void installedStudioResolvesItsLibraries();

  private:
    QTemporaryDir scratch_;
    QString deb_;
    QString root_;
};

void TestPackage::initTestCase() {
    QVERIFY(scratch_.isValid());
    const Result cpack = run(QStringLiteral(MYELIN_CPACK),
                             {QStringLiteral("-G"), QStringLiteral("DEB"), QStringLiteral("-B"),
                              scratch_.filePath("out")},
                             scratch_.path(), QStringLiteral(MYELIN_BINARY_DIR));
    QVERIFY2(cpack.code == 0, qPrintable(cpack.out));
    const QStringList debs =
        QDir(scratch_.filePath("out")).entryList({QStringLiteral("*.deb")}, QDir::Files);
    QCOMPARE(debs.size(), 1);
    deb_ = QDir(scratch_.filePath("out")).filePath(debs.first());
    root_ = scratch_.filePath("root");
    const Result unpack =
        run(QStringLiteral("dpkg-deb"), {QStringLiteral("-x"), deb_, root_}, scratch_.path());
    QVERIFY2(unpack.code == 0, qPrintable(unpack.out));
}

void TestPackage::packageDescribesItself() {
    const Result fields = run(QStringLiteral("dpkg-deb"),
                              {QStringLiteral("-f"), deb_, QStringLiteral("Package"),
                               QStringLiteral("Depends"), QStringLiteral("Recommends")},
                              scratch_.path());
    QVERIFY2(fields.code == 0, qPrintable(fields.out));
    QVERIFY2(fields.out.contains(QStringLiteral("Package: myelin-studio")), qPrintable(fields.out));
    // dpkg-shlibdeps found the libraries the binaries link.
    for (const char* dependency : {"libqt6widgets6", "libdnnl", "libsqlite3", "libopenblas"})
        QVERIFY2(fields.out.contains(QLatin1String(dependency)),
                 qPrintable(QStringLiteral("no %1 in:\n%2").arg(dependency, fields.out)));
    QVERIFY2(fields.out.contains(QStringLiteral("Recommends: dataset-fashion-mnist")),
             qPrintable(fields.out));
}

void TestPackage::installedCliRuns() {
    const QString myelin = root_ + QStringLiteral("/usr/bin/myelin");
    QVERIFY2(QFile::exists(myelin), qPrintable(myelin));
    const Result version = run(myelin, {QStringLiteral("--version")}, scratch_.path());
    QCOMPARE(version.code, 0);
    QVERIFY2(version.out.startsWith(QStringLiteral("myelin ")), qPrintable(version.out));
    const QString example = root_ + QStringLiteral("/usr/share/myelin/examples/fashion_cnn.myelin");
    const Result check = run(myelin, {QStringLiteral("check"), example}, scratch_.path());
    QVERIFY2(check.code == 0, qPrintable(check.out));
    QVERIFY2(check.out.contains(QStringLiteral("Conv2d")), qPrintable(check.out));
    // The example plugin, found in the installed lib/myelin/plugins beside the installed core.
    const Result plugins = run(myelin, {QStringLiteral("plugins")}, scratch_.path());
    QVERIFY2(plugins.code == 0, qPrintable(plugins.out));
    QVERIFY2(plugins.out.contains(QStringLiteral("SqueezeExcitation")), qPrintable(plugins.out));
    QVERIFY2(plugins.out.contains(root_), qPrintable(plugins.out));
}

void TestPackage::installedFilesAreThere() {
    for (const char* file :
         {"/usr/share/applications/myelin-studio.desktop",
          "/usr/share/metainfo/io.myelin.Studio.metainfo.xml",
          "/usr/share/icons/hicolor/scalable/apps/io.myelin.Studio.svg",
          "/usr/share/man/man1/myelin-studio.1.gz", "/usr/share/doc/myelin-studio/copyright",
          "/usr/share/doc/myelin-studio/changelog.gz",
          "/usr/share/myelin/examples/fashion_mlp.myelin",
          "/usr/share/myelin/examples/data/tabular_regression.csv",
          "/usr/include/myelin/plugin/plugin.h"})
        QVERIFY2(QFile::exists(root_ + QLatin1String(file)), file);
    const Result man =
        run(QStringLiteral("gzip"),
            {QStringLiteral("-dc"), root_ + "/usr/share/man/man1/myelin.1.gz"}, scratch_.path());
    QCOMPARE(man.code, 0);
    const QString& page = man.out;
    QVERIFY2(page.startsWith(QStringLiteral(".TH MYELIN 1")), qPrintable(page.left(200)));
    // Generated from the command-line description: every command's options (roff's minus signs).
    QVERIFY2(page.contains(QStringLiteral("\\-\\-fork")), "the man page lacks train's options");
    QVERIFY2(page.contains(QStringLiteral(".SS \"runs list")), "the man page lacks runs list");
    // The bash completion, where bash-completion looks for it, defining the completion.
    const QString completion = root_ + "/usr/share/bash-completion/completions/myelin";
    QVERIFY2(QFile::exists(completion), qPrintable(completion));
    const Result complete =
        run(QStringLiteral("bash"),
            {QStringLiteral("-c"), "source '" + completion + "' && complete -p myelin"},
            scratch_.path());
    QCOMPARE(complete.code, 0);
    QCOMPARE(complete.out.trimmed(), QStringLiteral("complete -F _myelin myelin"));
}

void TestPackage::installedStudioResolvesItsLibraries() {
    const QString studio = root_ + QStringLiteral("/usr/bin/myelin-studio");
    QVERIFY2(QFile::exists(studio), qPrintable(studio));
    const Result ldd = run(QStringLiteral("ldd"), {studio}, scratch_.path());
    QCOMPARE(ldd.code, 0);
    QVERIFY2(!ldd.out.contains(QStringLiteral("not found")), qPrintable(ldd.out));
    // Its core is the installed one, not the build tree's.
    const auto lines = ldd.out.split(QLatin1Char('\n'));
    const auto core = std::find_if(lines.begin(), lines.end(), [](const QString& line) {
        return line.contains(QStringLiteral("libmyelin_core"));
    });
    QVERIFY2(core != lines.end(), qPrintable(ldd.out));
    QVERIFY2(core->contains(root_), qPrintable(*core));
}

QTEST_GUILESS_MAIN(TestPackage)
#include "test_package.moc"
