// The CPU backend's reduce / softmax / gemm / index kernels against long-double reference loops,
// below the tensor front end (white-box: includes core's internal backend header).
#include "cpu_kernel_checks.inc"

#include <QtTest>

class TestCpuKernels : public QObject {
    Q_OBJECT
  private slots:
    void kernels_match_reference_loops() {
        // Thousands of randomized and hand-picked cases; each failure is printed with its case.
        QCOMPARE(run_cpu_kernel_checks(), 0);
    }
};

QTEST_APPLESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
