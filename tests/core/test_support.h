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

// Fails the test unless `expr` throws `Type` whose message contains every one of the given parts.
#define CHECK_ERROR(Type, expr, ...)                                                               \
    do {                                                                                           \
        const QString msg_ = error_of<Type>([&] { (void)(expr); });                                \
        for (const char* part_ : {__VA_ARGS__})                                                    \
            QVERIFY2(msg_.contains(QLatin1String(part_)),                                          \
                     qPrintable(msg_ + " | wants: " + part_));                                     \
    } while (0)

// Numerical gradient check of fn at the given inputs (autograd::gradcheck; needs
// <myelin/autograd.h>).
#define GRADCHECK(fn, ...)                                                                         \
    do {                                                                                           \
        const auto r_ = autograd::gradcheck(fn, TensorList{__VA_ARGS__});                          \
        QVERIFY2(r_.ok, r_.message.c_str());                                                       \
    } while (0)
