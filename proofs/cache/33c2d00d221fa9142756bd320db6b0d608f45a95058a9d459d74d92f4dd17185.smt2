(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 58))
(declare-fun Ta_ () (_ BitVec 58))
(declare-fun Tb_ () (_ BitVec 58))
(declare-fun x0 () (_ BitVec 32))
(declare-fun x1 () (_ BitVec 32))
(assert
 (bvsle (_ bv288230376151695488 58) Ta_))
(assert
 (bvsge (_ bv16384 58) Ta_))
(assert
 (bvsle (_ bv288230376151695488 58) Tb_))
(assert
 (bvsge (_ bv16384 58) Tb_))
(assert
 (bvsle (_ bv288230376151207808 58) Ra_))
(assert
 (bvsge (_ bv507904 58) Ra_))
(assert
 (let ((?x43 ((_ sign_extend 1) ((_ extract 31 0) x1))))
 (let ((?x40 ((_ sign_extend 1) ((_ extract 31 0) x0))))
 (bvslt ?x40 ?x43))))
(assert
 (let ((?x63 (bvadd (bvadd ((_ sign_extend 25) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x68 ((_ extract 31 0) (ite (bvsgt (_ bv288230374004228096 58) ?x63) (_ bv288230374004228096 58) (ite (bvslt (_ bv2147483647 58) ?x63) (_ bv2147483647 58) ?x63)))))
(let ((?x54 (bvadd (bvadd ((_ sign_extend 25) ((_ sign_extend 1) ((_ extract 31 0) x1))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv288230374004228096 58) ?x54) (_ bv288230374004228096 58) (ite (bvslt (_ bv2147483647 58) ?x54) (_ bv2147483647 58) ?x54)))))
(bvslt ?x60 ?x68))))))
(check-sat)
