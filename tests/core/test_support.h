#pragma once
// Helpers shared by the core Qt tests.
#include <QString>

#include <exception>

// The message of the exception of type E that f() throws; otherwise a text saying what happened
// instead, so QVERIFY(error_of<E>(...).contains("...")) fails with a readable reason.
template <typename E, typename F> QString error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("wrong exception type: ") + e.what();
    }
    return QStringLiteral("no exception");
}
