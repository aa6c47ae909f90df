#pragma once
// Helpers every studio test uses: where screenshots go, saving one, and finding the examples.
#include <QDir>
#include <QPixmap>
#include <QString>
#include <QWidget>
#include <QtTest>

namespace myelin::test {

// MYELIN_TEST_ARTIFACTS (ctest sets it to <build>/test-artifacts), else a temporary folder.
inline QString artifactsDir() {
    QString dir = qEnvironmentVariable("MYELIN_TEST_ARTIFACTS");
    if (dir.isEmpty()) dir = QDir::temp().filePath(QStringLiteral("myelin-test-artifacts"));
    QDir().mkpath(dir);
    return dir;
}

// The widget as QWidget::grab() paints it, saved as `fileName` in artifactsDir().
inline void saveScreenshot(QWidget& widget, const QString& fileName) {
    const QString path = QDir(artifactsDir()).filePath(fileName);
    const QPixmap shot = widget.grab();
    QVERIFY(!shot.isNull());
    QVERIFY2(shot.save(path), qPrintable(QStringLiteral("cannot write ") + path));
    qInfo("screenshot: %s", qPrintable(path));
}

// The source tree: MYELIN_SOURCE_DIR (ctest sets it), else where this build was configured from.
inline QString sourceDir() {
    const QString dir = qEnvironmentVariable("MYELIN_SOURCE_DIR");
    return QDir::cleanPath(dir.isEmpty() ? QStringLiteral(MYELIN_TEST_SOURCE_DIR) : dir);
}

// resources/examples/<name>.myelin
inline QString examplePath(const char* name) {
    return QDir(sourceDir())
        .filePath(QStringLiteral("resources/examples/%1.myelin").arg(QLatin1String(name)));
}

} // namespace myelin::test
