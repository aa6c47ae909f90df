#include <QtTest>
class TestExportCode : public QObject {
    Q_OBJECT private slots : void placeholder() { QVERIFY(true); }
};
QTEST_GUILESS_MAIN(TestExportCode)
#include "test_export_code.moc"
